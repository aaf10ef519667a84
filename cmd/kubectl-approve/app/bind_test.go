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
	"errors"
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/cmd/kubectl-approve/app/ui"
)

// pausedRun is a run with one pending approval (call-0-0 at revision 3).
func pausedRun() *exagentv1.AgentRun {
	return makeRun("scale-web", "demo").Phase(exagentv1.PhaseAwaitingApproval).Revision(3).
		Call(call("call-0-0", "scale", `{"name":"web"}`, exagentv1.CallPending)).
		Approval(approval("call-0-0", "call-0-0", 3, exagentv1.ApprovalPending, time.Minute, time.Hour)).
		Apply(func(r *exagentv1.AgentRun) { r.UID = "uid-1" }).Obj()
}

// TestPlannedDecisionsCarryTheRunUID: every decision the plugin plans names
// the run it read, so admission refuses it if the name finds another run.
func TestPlannedDecisionsCarryTheRunUID(t *testing.T) {
	for _, kind := range []exagentv1.DecisionKind{exagentv1.DecisionApprove, exagentv1.DecisionDeny, exagentv1.DecisionCancel} {
		ds, err := planDecisions(pausedRun(), decisionRequest{Kind: kind}, t0)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if len(ds) != 1 || ds[0].Spec.RunUID != "uid-1" {
			t.Errorf("%s: spec.runUID %q, want the run's uid-1", kind, ds[0].Spec.RunUID)
		}
	}
}

// TestExpectHash: --expect-hash refuses, before anything is sent, a call
// whose payload hash is not the one the person read in show, naming both
// hashes and what to do.
func TestExpectHash(t *testing.T) {
	run := pausedRun()
	current := run.Status.Approvals[0].CurrentPayloadHash()
	tc := map[string]struct {
		expect  string
		wantErr string
	}{
		"no --expect-hash":   {},
		"the hash show read": {expect: current},
		"another hash": {expect: "sha256:seen-before",
			wantErr: "the call changed since you looked: approval call-0-0 of run \"scale-web\" has payload hash " + current +
				" now, not sha256:seen-before (--expect-hash); nothing was sent: run kubectl approve show scale-web again"},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			req := decisionRequest{Kind: exagentv1.DecisionApprove, ExpectHash: tc.expect}
			ds, err := planDecisions(run, req, t0)
			if err != nil {
				t.Fatal(err)
			}
			err = checkExpectedHash(run, req, ds)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
	o := &decideOptions{RunName: "scale-web", Request: decisionRequest{Kind: exagentv1.DecisionApprove, All: true, ExpectHash: current}}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--expect-hash is the hash of one call") {
		t.Errorf("--all with --expect-hash: %v", err)
	}
}

// TestBindSeen: the page's decision is refused when the run read at POST
// time is not the one the page rendered — another UID (re-created), an
// edit under a quorum (another payload hash), another revision — and
// otherwise carries exactly what the page showed.
func TestBindSeen(t *testing.T) {
	run := pausedRun()
	shown := ui.Seen{RunUID: "uid-1", Revision: 3, PayloadHash: run.Status.Approvals[0].CurrentPayloadHash()}
	edited := func(r *exagentv1.AgentRun) {
		r.Status.Approvals[0].Edit = &exagentv1.ApprovalEdit{Args: `{"name":"api"}`, PayloadHash: "sha256:edited",
			Editor: exagentv1.Actor{Username: "frank"}}
	}
	tc := map[string]struct {
		edit      func(*exagentv1.AgentRun)
		wantStale bool
	}{
		"the run the page showed":    {},
		"re-created under the name":  {edit: func(r *exagentv1.AgentRun) { r.UID = "uid-2" }, wantStale: true},
		"edited by another approver": {edit: edited, wantStale: true},
		"paused again":               {edit: func(r *exagentv1.AgentRun) { r.Status.Approvals[0].Revision = 4 }, wantStale: true},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			now := run.DeepCopy()
			if tc.edit != nil {
				tc.edit(now)
			}
			ds, err := planDecisions(now, decisionRequest{Kind: exagentv1.DecisionApprove, ApprovalID: "call-0-0", Reason: "ok"}, t0)
			if err != nil {
				t.Fatal(err)
			}
			err = bindSeen(ds[0], shown)
			if got := errors.Is(err, ui.ErrCallChanged); got != tc.wantStale {
				t.Fatalf("bindSeen = %v, want stale %v", err, tc.wantStale)
			}
			if !tc.wantStale {
				s := ds[0].Spec
				if (ui.Seen{RunUID: s.RunUID, Revision: s.Revision, PayloadHash: s.PayloadHash}) != shown {
					t.Fatalf("the decision binds %s/%d/%s, want what the page showed %+v", s.RunUID, s.Revision, s.PayloadHash, shown)
				}
			}
		})
	}
}
