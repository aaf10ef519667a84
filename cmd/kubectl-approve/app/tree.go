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
	"io"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Delegation trees (docs/architecture.md §5): a child run's approvals are listed with
// its root and its path from the root; `show ROOT` prints the tree; and a
// decision named after a run with nothing pending of its own goes to the
// one approval pending anywhere below it.

// pathSep joins the runs of a path from the root: triage-42 › deploy-7f3a.
const pathSep = " › "

// rootName is the name of run's tree's root (run itself for a root).
func rootName(run *exagentv1.AgentRun) string {
	if d := run.Spec.Delegation; d != nil {
		return d.Root.Name
	}
	return run.Name
}

// treeOf reads the runs of run's tree below run (run excluded), ordered by
// path: the runs labelled with its root whose path passes through run.
func treeOf(ctx context.Context, c client.Client, run *exagentv1.AgentRun) ([]exagentv1.AgentRun, map[string]*exagentv1.AgentRun, error) {
	root := rootName(run)
	var list exagentv1.AgentRunList
	if err := c.List(ctx, &list, client.InNamespace(run.Namespace),
		client.MatchingLabels{exagentv1.LabelRootRun: exagentv1.LabelValue(root)}); err != nil {
		return nil, nil, fmt.Errorf("listing the runs of the tree of %s: %w", root, err)
	}
	byName := map[string]*exagentv1.AgentRun{run.Name: run}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	var below []exagentv1.AgentRun
	for i := range list.Items {
		r := &list.Items[i]
		if r.Spec.Delegation == nil || r.Spec.Delegation.Root.Name != root || r.Name == run.Name {
			continue
		}
		path := r.TreePath(byName)
		for _, n := range path[:len(path)-1] {
			if n == run.Name {
				below = append(below, *r)
				break
			}
		}
	}
	sort.Slice(below, func(i, j int) bool {
		return strings.Join(below[i].TreePath(byName), "/") < strings.Join(below[j].TreePath(byName), "/")
	})
	return below, byName, nil
}

// withPaths fills each row's root and path from the runs listed.
func withPaths(rows []pendingApproval, runs []exagentv1.AgentRun) []pendingApproval {
	byName := map[string]*exagentv1.AgentRun{}
	for i := range runs {
		byName[runs[i].Namespace+"/"+runs[i].Name] = &runs[i]
	}
	for i := range rows {
		run := byName[rows[i].Namespace+"/"+rows[i].Run]
		if run == nil || run.Spec.Delegation == nil {
			continue
		}
		local := map[string]*exagentv1.AgentRun{}
		for k, v := range byName {
			if ns, name, _ := strings.Cut(k, "/"); ns == run.Namespace {
				local[name] = v
			}
		}
		rows[i].Root = rootName(run)
		rows[i].Path = strings.Join(run.TreePath(local), pathSep)
	}
	return rows
}

// missingAncestors reads by name the ancestors of the waiting runs of
// changed that known lacks, so that their rows keep their whole path when
// only the waiting runs were listed: an ancestor mirrors its descendant's
// AwaitingApproval (and is listed with it) only once it has observed it.
// An ancestor that cannot be read ends its path there, as before.
func missingAncestors(ctx context.Context, c client.Reader, changed, known []exagentv1.AgentRun) []exagentv1.AgentRun {
	byKey := map[client.ObjectKey]*exagentv1.AgentRun{}
	for i := range known {
		byKey[client.ObjectKeyFromObject(&known[i])] = &known[i]
	}
	var read []*exagentv1.AgentRun
	for i := range changed {
		if len(changed[i].Status.Pending()) == 0 {
			continue
		}
		cur := &changed[i]
		for depth := 0; cur.Spec.Delegation != nil && depth < exagentv1.MaxDelegationDepth; depth++ {
			key := client.ObjectKey{Namespace: cur.Namespace, Name: cur.Spec.Delegation.Parent.Name}
			parent, ok := byKey[key]
			if !ok {
				parent = &exagentv1.AgentRun{}
				if err := c.Get(ctx, key, parent); err != nil {
					break
				}
				byKey[key] = parent
				read = append(read, parent)
			}
			cur = parent
		}
	}
	out := make([]exagentv1.AgentRun, 0, len(read))
	for _, r := range read {
		out = append(out, *r)
	}
	return out
}

// delegatedTarget returns the run of run's tree (run or below it) that holds
// the one approval pending in the tree, for a decision named after run; run
// itself when it has pending approvals of its own or no tree. Several
// pending below it are ambiguous: the error lists them with their paths.
func delegatedTarget(ctx context.Context, c client.Client, run *exagentv1.AgentRun) (*exagentv1.AgentRun, error) {
	if len(run.Status.Pending()) > 0 || len(run.Status.Children) == 0 {
		return run, nil
	}
	below, byName, err := treeOf(ctx, c, run)
	if err != nil {
		return nil, err
	}
	var holders []*exagentv1.AgentRun
	var rows []pendingApproval
	for i := range below {
		if p := below[i].Status.Pending(); len(p) > 0 {
			holders = append(holders, &below[i])
			for _, a := range p {
				row := newPendingApproval(&below[i], a)
				row.Root, row.Path = rootName(&below[i]), strings.Join(below[i].TreePath(byName), pathSep)
				rows = append(rows, row)
			}
		}
	}
	switch {
	case len(rows) == 0:
		return run, nil // planDecisions says there is nothing to decide
	case len(rows) == 1:
		return holders[0], nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "run %q has %d approvals pending in its tree; decide on the run that holds one "+
		"(kubectl approve RUN APPROVAL):\n", run.Name, len(rows))
	for _, r := range rows {
		fmt.Fprintf(&b, "  %s  %s  (%s)\n", r.Path, r.Approval, orNone(r.Tool))
	}
	return nil, fmt.Errorf("%s", strings.TrimRight(b.String(), "\n"))
}

// renderTree prints run and the runs below it, each with its phase and
// pending approvals, indented by depth.
func renderTree(w io.Writer, run *exagentv1.AgentRun, below []exagentv1.AgentRun, byName map[string]*exagentv1.AgentRun) {
	if len(below) == 0 && run.Spec.Delegation == nil {
		return
	}
	_, _ = fmt.Fprintln(w)
	_, _ = fmt.Fprintln(w, "Tree:")
	base := len(run.TreePath(byName))
	line := func(r *exagentv1.AgentRun) {
		depth := len(r.TreePath(byName)) - base
		pending := ""
		if n := len(r.Status.Pending()); n > 0 {
			ids := make([]string, 0, n)
			for _, a := range r.Status.Pending() {
				tool := ""
				if c := r.Status.Call(a.CallID); c != nil {
					tool = " " + c.Tool
				}
				ids = append(ids, a.ID+tool)
			}
			pending = "  pending: " + strings.Join(ids, ", ")
		}
		_, _ = fmt.Fprintf(w, "  %s%s (agent %s): %s%s\n", strings.Repeat("  ", depth), r.Name, r.Spec.AgentRef.Name,
			orNone(string(r.Status.Phase)), pending)
	}
	if run.Spec.Delegation != nil {
		_, _ = fmt.Fprintf(w, "  path: %s\n", strings.Join(run.TreePath(byName), pathSep))
	}
	line(run)
	for i := range below {
		line(&below[i])
	}
}
