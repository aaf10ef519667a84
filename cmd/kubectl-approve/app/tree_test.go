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
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// childOf places a run below parent in parent's tree (RunWrapper.Apply).
func childOf(parent *exagentv1.AgentRun) func(*exagentv1.AgentRun) {
	root := exagentv1.RunReference{Name: parent.Name, UID: string(parent.UID)}
	if d := parent.Spec.Delegation; d != nil {
		root = d.Root
	}
	return func(r *exagentv1.AgentRun) {
		r.Spec.Delegation = &exagentv1.Delegation{Parent: exagentv1.RunReference{Name: parent.Name}, Root: root, CallID: "c"}
	}
}

func triageTree() (root, child, grandchild *exagentv1.AgentRun) {
	root = makeRun("triage-42", "ops").Phase(exagentv1.PhaseAwaitingApproval).Obj()
	child = makeRun("triage-42-fix", "ops").Phase(exagentv1.PhaseAwaitingApproval).Apply(childOf(root)).Obj()
	grandchild = makeRun("deploy-7f3a", "ops").Phase(exagentv1.PhaseAwaitingApproval).Apply(childOf(child)).
		Call(call("scale", "scale", `{"replicas":3}`, exagentv1.CallPending)).
		Approval(approval("scale-r1", "scale", 0, exagentv1.ApprovalPending, time.Minute, time.Hour)).Obj()
	return root, child, grandchild
}

func TestListShowsTheTreePath(t *testing.T) {
	root, child, gc := triageTree()
	runs := []exagentv1.AgentRun{*root, *child, *gc}
	rows := withPaths(pendingApprovals(runs), runs)
	if len(rows) != 1 {
		t.Fatalf("rows = %+v, want the grandchild's approval", rows)
	}
	if rows[0].Root != "triage-42" || rows[0].Path != "triage-42 › triage-42-fix › deploy-7f3a" {
		t.Errorf("root %q path %q", rows[0].Root, rows[0].Path)
	}
	var out bytes.Buffer
	if err := printApprovalTable(&out, rows, t0, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "triage-42 › triage-42-fix › deploy-7f3a") {
		t.Errorf("table does not show the path:\n%s", out.String())
	}
}

func TestRenderTree(t *testing.T) {
	root, child, gc := triageTree()
	byName := map[string]*exagentv1.AgentRun{root.Name: root, child.Name: child, gc.Name: gc}
	var out bytes.Buffer
	renderTree(&out, root, []exagentv1.AgentRun{*child, *gc}, byName)
	want := `
Tree:
  triage-42 (agent ops): AwaitingApproval
    triage-42-fix (agent ops): AwaitingApproval
      deploy-7f3a (agent ops): AwaitingApproval  pending: scale-r1 scale
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	out.Reset()
	renderTree(&out, makeRun("alone", "ops").Obj(), nil, nil)
	if out.Len() != 0 {
		t.Errorf("a run without a tree printed %q", out.String())
	}
}
