/*
Copyright 2026 The exagent Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package webhook

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
)

// checkServiceAccountNames authorizes the names an Agent's writer adds to
// spec.serviceAccountNames: each lets every creator of the Agent's runs
// have them act as that ServiceAccount (checkServiceAccount), so only
// someone who may "use" (or "impersonate") it may add it. Names already
// listed in the old Agent are not asked again: an edit of the instructions,
// or GitOps applying the same list, needs no right over them.
func (w *AgentWebhook) checkServiceAccountNames(ctx context.Context, a, old *exagentv1.Agent) (field.ErrorList, error) {
	var added []int
	for i, sa := range a.Spec.ServiceAccountNames {
		if sa != defaultServiceAccount && (old == nil || !slices.Contains(old.Spec.ServiceAccountNames, sa)) {
			added = append(added, i)
		}
	}
	if len(added) == 0 {
		return nil, nil
	}
	req, err := requester(ctx)
	if err != nil {
		return nil, err
	}
	if w.Client == nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("the Agent webhook has no client to authorize spec.serviceAccountNames"))
	}
	var errs field.ErrorList
	for _, i := range added {
		sa := a.Spec.ServiceAccountNames[i]
		ok, err := authz.MayUseServiceAccount(ctx, w.Client, req.UserInfo, a.Namespace, sa)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if !ok {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "serviceAccountNames").Index(i), fmt.Sprintf(
				"%q may not use ServiceAccount %s/%s, so may not let this Agent's runs act as it: "+
					"grant the verb %q on serviceaccounts %q in namespace %s, or remove the name",
				req.UserInfo.Username, a.Namespace, sa, authz.VerbUseServiceAccount, sa, a.Namespace)))
		}
	}
	return errs, nil
}
