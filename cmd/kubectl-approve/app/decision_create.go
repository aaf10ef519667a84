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

package app

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// createDecision sends d with c, the deciding verbs' and the page's one
// way to create a decision. The name is chosen here, not by the
// apiserver's generateName: the admission webhook defaults
// spec.operationID to the name and seals the decision over it, and
// mutating admission runs before the apiserver generates a name. A
// client-side name also lets a client dry run show the real name.
func createDecision(ctx context.Context, c client.Client, d *exagentv1.ApprovalDecision, dry dryRun) error {
	const attempts = 3 // a name collision on 5 random characters is rare; retry a few
	prefix := d.GenerateName
	d.GenerateName = ""
	for i := 0; ; i++ {
		d.Name = prefix + utilrand.String(5)
		var err error
		switch dry {
		case dryRunClient:
			return nil
		case dryRunServer:
			err = c.Create(ctx, d, client.DryRunAll)
		default:
			err = c.Create(ctx, d)
		}
		if apierrors.IsAlreadyExists(err) && i+1 < attempts {
			continue
		}
		if err != nil {
			return fmt.Errorf("creating the %s decision for run %q: %w", strings.ToLower(string(d.Spec.Decision)), d.Spec.RunRef.Name, err)
		}
		return nil
	}
}
