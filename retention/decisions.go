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

package retention

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/index"
)

// A decision belongs to its run: the mutating webhook gives it an
// ownerReference to the run it names at admission (a cluster's garbage
// collector deletes it with the run), and seals the run's UID in it.

// runOf is the UID of the run d belongs to: the run the admission webhook
// sealed (and signed) it for, else its ownerReference's — metadata its
// author may change later, so only a fallback; empty when d records
// neither.
func runOf(d *exagentv1.ApprovalDecision) types.UID {
	if sealed := types.UID(d.Annotations[authz.RunUIDAnnotation]); sealed != "" {
		return sealed
	}
	return types.UID(d.RunOwner())
}

// belongsTo reports whether d is a decision of run: it names the run, and
// the run it records (owner or sealed UID) is this one — a decision that
// records none was made for this name, which one run holds at a time.
func belongsTo(d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun) bool {
	if d.Namespace != run.Namespace || d.Spec.RunRef.Name != run.Name {
		return false
	}
	uid := runOf(d)
	return uid == "" || uid == run.UID
}

// decisionsOf lists the decisions of run from the cache, in creation order.
func decisionsOf(ctx context.Context, c client.Reader, run *exagentv1.AgentRun) ([]exagentv1.ApprovalDecision, error) {
	var list exagentv1.ApprovalDecisionList
	if err := c.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingFields{index.RunRef: run.Name}); err != nil {
		return nil, fmt.Errorf("listing the decisions of run %s/%s: %w", run.Namespace, run.Name, err)
	}
	out := list.Items[:0]
	for i := range list.Items {
		if belongsTo(&list.Items[i], run) {
			out = append(out, list.Items[i])
		}
	}
	sortByCreation(out)
	return out, nil
}

func sortByCreation(ds []exagentv1.ApprovalDecision) {
	slices.SortFunc(ds, func(a, b exagentv1.ApprovalDecision) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
