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
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// decisionRequest is what the user asked for on the command line.
type decisionRequest struct {
	Kind       exagentv1.DecisionKind
	ApprovalID string
	All        bool
	CallID     string
	Outcome    exagentv1.ResolveOutcome
	Evidence   string
	Reason     string
	// Sets (--set key=value) and ArgsFile (--args-file, its content) edit
	// the call before it is approved; ForRun (--for-run) approves the tool
	// for the rest of the run (scope Run).
	Sets     []string
	ArgsFile []byte
	ForRun   bool
	// Answer (answer): the answer as JSON, built from --text, --set or -f
	// (answer.go); Action is Accept, or Decline / Cancel (--decline, --cancel).
	Answer []byte
	Action exagentv1.AnswerAction
	// ExpectHash (--expect-hash) is the payload hash the person read in
	// show: the decision is refused before anything is sent when the
	// call's hash is another one now.
	ExpectHash string
}

// edits reports whether the request edits the call.
func (r decisionRequest) edits() bool { return len(r.Sets) > 0 || r.ArgsFile != nil }

// planDecisions builds the ApprovalDecisions req means for run, binding each
// to the payload hash and revision the plugin read — so that a request that
// changed in between is rejected rather than approved unread. It refuses
// ambiguous requests (several pending approvals and none named) instead of
// guessing.
//
// A Cancel needs no pending approval: it stops the run in whatever phase it
// is. A Resolve also applies to a Cancelled run's Uncertain calls, for the
// record only (Succeeded or Failed: nothing runs again).
func planDecisions(run *exagentv1.AgentRun, req decisionRequest, now time.Time) ([]*exagentv1.ApprovalDecision, error) {
	phase := run.Status.Phase
	recordOnly := req.Kind == exagentv1.DecisionResolve && phase == exagentv1.PhaseCancelled
	switch {
	case recordOnly && req.Outcome == exagentv1.ResolveRetry:
		return nil, fmt.Errorf("run %q is Cancelled: nothing runs again, so a call cannot be retried; "+
			"resolve it --outcome Succeeded or Failed to record what happened", run.Name)
	case phase.IsTerminal() && !recordOnly:
		return nil, fmt.Errorf("run %q has already ended: %s", run.Name, phase)
	}
	switch req.Kind {
	case exagentv1.DecisionApprove, exagentv1.DecisionDeny:
		approvals, err := chooseApprovals(run, req, now)
		if err != nil {
			return nil, err
		}
		if req.edits() && len(approvals) != 1 {
			return nil, fmt.Errorf("--set and --args-file edit one call: name the approval (run %q has %d pending)", run.Name, len(approvals))
		}
		out := make([]*exagentv1.ApprovalDecision, 0, len(approvals))
		for _, a := range approvals {
			d := newDecision(run, req)
			d.Spec.ApprovalID = a.ID
			d.Spec.PayloadHash = a.CurrentPayloadHash()
			d.Spec.Revision = a.Revision
			if req.Kind == exagentv1.DecisionApprove && req.ForRun {
				d.Spec.Scope = exagentv1.ScopeRun
			}
			if req.Kind == exagentv1.DecisionApprove && req.edits() {
				args, err := editedArguments(run, &a, req)
				if err != nil {
					return nil, err
				}
				d.Spec.Arguments = &runtime.RawExtension{Raw: args}
			}
			out = append(out, d)
		}
		return out, nil
	case exagentv1.DecisionCancel:
		d := newDecision(run, req)
		d.Spec.Revision = run.Status.Revision
		if req.ApprovalID != "" {
			a, err := pendingApprovalNamed(run, req.ApprovalID)
			if err != nil {
				return nil, err
			}
			d.Spec.ApprovalID = a.ID
			d.Spec.PayloadHash = a.PayloadHash
			d.Spec.Revision = a.Revision
		}
		return []*exagentv1.ApprovalDecision{d}, nil
	case exagentv1.DecisionResolve:
		call, err := chooseUncertainCall(run, req.CallID)
		if err != nil {
			return nil, err
		}
		d := newDecision(run, req)
		d.Spec.CallID = call.ID
		d.Spec.PayloadHash = call.PayloadHash
		d.Spec.Revision = run.Status.Revision
		d.Spec.Outcome = req.Outcome
		d.Spec.Evidence = req.Evidence
		return []*exagentv1.ApprovalDecision{d}, nil
	case exagentv1.DecisionAnswer:
		q, err := chooseQuestion(run, req.ApprovalID)
		if err != nil {
			return nil, err
		}
		d := newDecision(run, req)
		d.Spec.ApprovalID = q.ID
		d.Spec.PayloadHash = q.PayloadHash
		d.Spec.Revision = q.Revision
		if req.Action != exagentv1.AnswerAccept {
			d.Spec.Action = req.Action
		} else {
			d.Spec.Answer = &runtime.RawExtension{Raw: req.Answer}
		}
		return []*exagentv1.ApprovalDecision{d}, nil
	}
	return nil, fmt.Errorf("unknown decision %q", req.Kind)
}

// checkExpectedHash refuses decisions whose call is not the one the
// person read: --expect-hash names the payload hash show printed, and
// each decision carries the hash the plugin just read.
func checkExpectedHash(run *exagentv1.AgentRun, req decisionRequest, decisions []*exagentv1.ApprovalDecision) error {
	want := strings.TrimSpace(req.ExpectHash)
	if want == "" {
		return nil
	}
	for _, d := range decisions {
		if d.Spec.PayloadHash != want {
			return fmt.Errorf("the call changed since you looked: approval %s of run %q has payload hash %s now, not %s (--expect-hash); "+
				"nothing was sent: run kubectl approve show %s again", d.Spec.ApprovalID, run.Name, d.Spec.PayloadHash, want, run.Name)
		}
	}
	return nil
}

func newDecision(run *exagentv1.AgentRun, req decisionRequest) *exagentv1.ApprovalDecision {
	return &exagentv1.ApprovalDecision{
		TypeMeta: metav1.TypeMeta{APIVersion: exagentv1.GroupVersion.String(), Kind: "ApprovalDecision"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: generateName(run.Name, req.Kind),
			Namespace:    run.Namespace,
		},
		Spec: exagentv1.ApprovalDecisionSpec{
			RunRef:   exagentv1.LocalObjectReference{Name: run.Name},
			Decision: req.Kind,
			Reason:   req.Reason,
			// The run read: admission refuses the decision if the name
			// finds another run by then (deleted and re-created).
			RunUID: string(run.UID),
		},
	}
}

// generateName is "<run>-<verb>-", cut so that the 5-character random
// suffix create adds still fits a 253-character name.
func generateName(run string, kind exagentv1.DecisionKind) string {
	suffix := "-" + strings.ToLower(string(kind)) + "-"
	const max = 253 - 5
	if len(run)+len(suffix) > max {
		run = strings.TrimRight(run[:max-len(suffix)], "-.")
	}
	return run + suffix
}

func chooseApprovals(run *exagentv1.AgentRun, req decisionRequest, now time.Time) ([]exagentv1.Approval, error) {
	var pending []exagentv1.Approval
	questions := 0
	for _, a := range run.Status.Pending() {
		if a.IsQuestion() {
			questions++ // answered, never approved (answer.go)
			continue
		}
		pending = append(pending, a)
	}
	if len(pending) == 0 {
		if questions > 0 {
			return nil, fmt.Errorf("run %q waits for an answer, not an approval: see the question with kubectl approve show %s, "+
				"answer it with kubectl approve answer %s --text …", run.Name, run.Name, run.Name)
		}
		return nil, fmt.Errorf("run %q has no pending approvals (phase %s)", run.Name, orNone(string(run.Status.Phase)))
	}
	switch {
	case req.ApprovalID != "":
		a, err := pendingApprovalNamed(run, req.ApprovalID)
		if err != nil {
			return nil, err
		}
		if a.IsQuestion() {
			return nil, fmt.Errorf("%s of run %q is a question: answer it with kubectl approve answer %s %s --text … (or --decline)",
				a.ID, run.Name, run.Name, a.ID)
		}
		return []exagentv1.Approval{*a}, nil
	case req.All || len(pending) == 1:
		return pending, nil
	}
	return nil, &ambiguousError{run: run, now: now}
}

func pendingApprovalNamed(run *exagentv1.AgentRun, id string) (*exagentv1.Approval, error) {
	a := run.Status.Approval(id)
	if a == nil {
		ids := make([]string, 0)
		for _, p := range run.Status.Pending() {
			ids = append(ids, p.ID)
		}
		return nil, fmt.Errorf("run %q has no approval %q (pending: %s)", run.Name, id, orNone(strings.Join(ids, ", ")))
	}
	if a.State != exagentv1.ApprovalPending {
		return nil, fmt.Errorf("approval %q of run %q is already %s", id, run.Name, a.State)
	}
	return a, nil
}

func chooseUncertainCall(run *exagentv1.AgentRun, id string) (*exagentv1.ToolCall, error) {
	uncertain := run.Status.UncertainCalls()
	if id != "" {
		c := run.Status.Call(id)
		if c == nil {
			return nil, fmt.Errorf("run %q has no tool call %q", run.Name, id)
		}
		if c.State != exagentv1.CallUncertain {
			return nil, fmt.Errorf("tool call %q of run %q is %s, not Uncertain: only an Uncertain call can be resolved", id, run.Name, c.State)
		}
		return c, nil
	}
	switch len(uncertain) {
	case 0:
		return nil, fmt.Errorf("run %q has no Uncertain tool calls (phase %s)", run.Name, orNone(string(run.Status.Phase)))
	case 1:
		return &uncertain[0], nil
	}
	ids := make([]string, 0, len(uncertain))
	for _, c := range uncertain {
		ids = append(ids, fmt.Sprintf("%s (%s)", c.ID, c.Tool))
	}
	return nil, fmt.Errorf("run %q has %d Uncertain tool calls; name one with --call: %s", run.Name, len(uncertain), strings.Join(ids, ", "))
}

// ambiguousError refuses to pick one of several pending approvals and
// lists them, so the user can name one or pass --all.
type ambiguousError struct {
	run *exagentv1.AgentRun
	now time.Time
}

func (e *ambiguousError) Error() string {
	rows := pendingApprovals([]exagentv1.AgentRun{*e.run})
	var b bytes.Buffer
	fmt.Fprintf(&b, "run %q has %d pending approvals; name one (kubectl approve %s APPROVAL) or pass --all:\n",
		e.run.Name, len(rows), e.run.Name)
	_ = printApprovalTable(&b, rows, e.now, false)
	return strings.TrimRight(b.String(), "\n")
}
