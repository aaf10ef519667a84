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

package ui

import (
	"context"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// descendants are the runs below run in its delegation tree, each with
// its depth under run, in path order (a child, then its own children):
// the runs labelled with the tree's root whose chain of parents passes
// through run. nil when run delegated nothing or the list is refused (the
// page then shows status.children, one level).
func descendants(ctx context.Context, c client.Client, run *exagentv1.AgentRun) []childView {
	if len(run.Status.Children) == 0 {
		return nil
	}
	root := run.Name
	if d := run.Spec.Delegation; d != nil {
		root = d.Root.Name
	}
	var list exagentv1.AgentRunList
	if err := c.List(ctx, &list, client.InNamespace(run.Namespace),
		client.MatchingLabels{exagentv1.LabelRootRun: exagentv1.LabelValue(root)}); err != nil {
		return nil
	}
	byName := map[string]*exagentv1.AgentRun{run.Name: run}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	type row struct {
		path []string
		view childView
	}
	var rows []row
	for i := range list.Items {
		r := &list.Items[i]
		if r.Name == run.Name || r.Spec.Delegation == nil {
			continue
		}
		path := r.TreePath(byName)
		at := -1
		for k, n := range path {
			if n == run.Name {
				at = k
			}
		}
		if at < 0 {
			continue // another branch of the tree
		}
		rows = append(rows, row{path: path[at:], view: childView{Name: r.Name, Agent: r.Spec.AgentRef.Name,
			Phase: string(r.Status.Phase), Message: r.Status.Message, Pending: r.Status.PendingApprovals, Depth: len(path) - at - 1}})
	}
	sort.Slice(rows, func(i, j int) bool { return strings.Join(rows[i].path, "/") < strings.Join(rows[j].path, "/") })
	out := make([]childView, len(rows))
	for i := range rows {
		out[i] = rows[i].view
	}
	return out
}
