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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
)

// defaultServiceAccount is the ServiceAccount a run acts as when
// spec.serviceAccountName is unset (AgentRunSpec.ServiceAccount).
const defaultServiceAccount = "default"

// checkServiceAccount authorizes spec.serviceAccountName against the run's
// creator: the builtin tools act as that ServiceAccount, so naming it is
// acting as it. Allowed when the run's Agent lists it in
// spec.serviceAccountNames (whoever added it there held "use" on it, see
// checkServiceAccountNames), or the creator may "use" or "impersonate" it.
//
// Not checked: the namespace's "default" ServiceAccount, which any
// namespace editor can already run pods as and which is what a run without
// the field gets; and child runs (spec.delegation, created only by the
// manager — checkDelegation), which carry their parent's ServiceAccount:
// the creator here is the manager, whose rights say nothing, so the
// manager itself holds a child to the child Agent's
// spec.serviceAccountNames before it creates the child and again before
// each of the child's builtin calls (controllers/agentrun_delegate.go,
// docs/delegation.md).
//
// A missing Agent is not a rejection elsewhere (GitOps may apply the run
// first), but here it cannot vouch: the creator's own RBAC decides, and the
// refusal says the Agent was not found.
func (w *AgentRunWebhook) checkServiceAccount(ctx context.Context, req admission.Request, run *exagentv1.AgentRun) (*field.Error, error) {
	sa := run.Spec.ServiceAccount()
	if sa == defaultServiceAccount || run.Spec.Delegation != nil {
		return nil, nil
	}
	if w.Client == nil || w.Reader == nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("the AgentRun webhook has no client to authorize spec.serviceAccountName"))
	}
	agentName := run.Spec.AgentRef.Name
	agent := &exagentv1.Agent{}
	vouch := fmt.Sprintf("or list it in Agent %q's spec.serviceAccountNames", agentName)
	switch err := w.Reader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: agentName}, agent); {
	case err == nil:
		if slices.Contains(agent.Spec.ServiceAccountNames, sa) {
			return nil, nil
		}
	case apierrors.IsNotFound(err):
		vouch = fmt.Sprintf("or create Agent %q listing it in spec.serviceAccountNames (it was not found)", agentName)
	default:
		return nil, apierrors.NewInternalError(fmt.Errorf("reading Agent %s/%s to authorize spec.serviceAccountName: %w", run.Namespace, agentName, err))
	}
	ok, err := authz.MayUseServiceAccount(ctx, w.Client, req.UserInfo, run.Namespace, sa)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if ok {
		return nil, nil
	}
	return field.Forbidden(field.NewPath("spec", "serviceAccountName"), fmt.Sprintf(
		"creator %q may not use ServiceAccount %s/%s, which the run's builtin tools would act as: "+
			"grant the creator the verb %q on serviceaccounts %q in namespace %s, %s",
		req.UserInfo.Username, run.Namespace, sa, authz.VerbUseServiceAccount, sa, run.Namespace, vouch)), nil
}
