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

package loop

import (
	"fmt"
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Corrupt statuses — what no transition writes, but a hand edit, a bug or a
// bad restore can leave — must end the run Failed with a reason that says
// so, never panic the controller (a panicking reconcile is retried for ever).

// corruptBases are states the engine reaches, to corrupt.
func corruptBases(t testing.TB) map[string]struct {
	s   Status
	env *Env
} {
	env := defaultEnv(t)
	hp, awaiting := paused(t)
	approved := func() Status {
		h, _ := paused(t)
		h.approveAll()
		return h.s
	}()
	hu, uncertain := uncertainRun(t)
	_, inflight := inFlightRun(t)
	return map[string]struct {
		s   Status
		env *Env
	}{
		"awaiting":  {awaiting, hp.env},
		"approved":  {approved, env},
		"uncertain": {uncertain, hu.env},
		"inflight":  {inflight, env},
		"batch":     {atBatch(t, env, tools(call("s1", "search", `{}`))), env},
		"queued":    {queued(t, env), env},
	}
}

// entry is one engine entry point as a caller uses it.
type entry struct {
	name string
	run  func(s Status, env *Env, now time.Time) (Status, error)
}

// decisionOn aims a decision of kind at whatever s offers (Approve and
// Deny: the first pending approval; Resolve: the first Uncertain call;
// Cancel: the whole run), as alice.
func decisionOn(s Status, kind exagentv1.DecisionKind, op string) DecisionCmd {
	d := DecisionCmd{OperationID: op, Decision: kind, Actor: actor("alice"), Revision: s.Revision, Outcome: exagentv1.ResolveSucceeded}
	for _, a := range s.Approvals {
		if a.State == exagentv1.ApprovalPending && (kind == exagentv1.DecisionApprove || kind == exagentv1.DecisionDeny) {
			d.ApprovalID, d.PayloadHash, d.Revision = a.ID, a.PayloadHash, a.Revision
			break
		}
	}
	if kind == exagentv1.DecisionResolve {
		d.Outcome = exagentv1.ResolveSucceeded
		for _, c := range s.Calls {
			if c.State == exagentv1.CallUncertain {
				d.CallID, d.PayloadHash = c.ID, c.PayloadHash
				break
			}
		}
	} else {
		d.Outcome = ""
	}
	return d
}

// entries are every engine function a controller calls on a stored status.
func entries() []entry {
	decide := func(kind exagentv1.DecisionKind) entry {
		return entry{"Decide " + string(kind), func(s Status, env *Env, now time.Time) (Status, error) {
			st, _, err := Decide(s, env, decisionOn(s, kind, "corrupt-op-"+string(kind)), now)
			return st, err
		}}
	}
	fenced := func(s Status) Fence {
		if s.Claim == nil {
			return f1
		}
		return Fence{Holder: s.Claim.Holder, Attempt: s.Claim.Attempt}
	}
	return []entry{
		decide(exagentv1.DecisionApprove), decide(exagentv1.DecisionDeny),
		decide(exagentv1.DecisionResolve), decide(exagentv1.DecisionCancel),
		{"Step", func(s Status, env *Env, now time.Time) (Status, error) {
			st, _, err := Step(s, env, fenced(s), now)
			return st, err
		}},
		{"Claim", func(s Status, env *Env, now time.Time) (Status, error) {
			st, _, err := Claim(s, env, "worker-9", now)
			return st, err
		}},
		{"Recover", func(s Status, env *Env, now time.Time) (Status, error) { return Recover(s, env, now.Add(24*time.Hour)) }},
		{"Expire", func(s Status, env *Env, now time.Time) (Status, error) {
			st, _, err := Expire(s, env, now.Add(48*time.Hour))
			return st, err
		}},
		{"BeginEffect", func(s Status, env *Env, now time.Time) (Status, error) {
			var ids []string
			for _, c := range s.Calls {
				ids = append(ids, c.ID)
			}
			return BeginEffect(s, env, fenced(s), ids, now)
		}},
		{"RecordOutcome", func(s Status, env *Env, now time.Time) (Status, error) {
			id := "s1"
			if len(s.Calls) > 0 {
				id = s.Calls[0].ID
			}
			return RecordOutcome(s, env, fenced(s), ToolResult{CallID: id, Kind: ResultSucceeded, Output: "x"}, now)
		}},
		{"RecordModelResponse", func(s Status, env *Env, now time.Time) (Status, error) {
			return RecordModelResponse(s, env, fenced(s), tools(call("s1", "search", `{}`)), now)
		}},
		{"Pause", func(s Status, env *Env, now time.Time) (Status, error) { return Pause(s, env, fenced(s), now) }},
		{"Finish", func(s Status, env *Env, now time.Time) (Status, error) { return Finish(s, env, fenced(s), "x", now) }},
		{"Release", func(s Status, env *Env, now time.Time) (Status, error) { return Release(s, env, fenced(s), now) }},
		{"Wakeup+Conditions", func(s Status, env *Env, now time.Time) (Status, error) {
			Wakeup(s, env)
			Conditions(s, 1, now)
			return s, nil
		}},
	}
}

// call runs one entry point and turns a panic into a test failure.
func callSafely(t *testing.T, e entry, s Status, env *Env, now time.Time) (got Status, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s panicked on a corrupt status: %v\nstatus: %s", e.name, p, mustJSON(t, s))
		}
	}()
	return e.run(s, env, now)
}

// endAsCaller does what the controllers do with an engine error: a
// permanent one ends the run with Fail and the error's reason.
func endAsCaller(t *testing.T, s Status, err error) Status {
	t.Helper()
	e, ok := AsError(err)
	if !ok || !IsPermanent(err) {
		t.Fatalf("error %v is not a permanent engine error", err)
	}
	failed, ferr := Fail(s, e.Reason, e.Message, t0)
	if ferr != nil {
		t.Fatalf("Fail: %v", ferr)
	}
	return failed
}

// TestCorruptStatus feeds named corruptions through the entry point that
// meets them: each gives a permanent error with reason CorruptStatus (the
// caller's Fail ends the run with it) and a message naming what is wrong.
func TestCorruptStatus(t *testing.T) {
	bases := corruptBases(t)
	byName := map[string]entry{}
	for _, e := range entries() {
		byName[e.name] = e
	}
	cases := map[string]struct {
		base    string
		entry   string
		mut     func(*Status)
		wantMsg string
	}{
		"an approval naming a missing call": {base: "awaiting", entry: "Decide Approve",
			mut: func(s *Status) { s.Approvals[0].CallID = "ghost" }, wantMsg: `approval "p1-r1" names call "ghost", which is not in status.calls`},
		"a deny of an approval naming a missing call": {base: "awaiting", entry: "Decide Deny",
			mut: func(s *Status) { s.Approvals[0].CallID = "ghost" }, wantMsg: `names call "ghost"`},
		"a pending approval of a call that is no longer pending": {base: "awaiting", entry: "Decide Approve",
			mut: func(s *Status) {
				s.Calls[1].State = exagentv1.CallSucceeded
				s.Calls[1].Outcome = &exagentv1.CallOutcome{Succeeded: true, Result: "x"}
			}, wantMsg: `approval "p1-r1" is pending but call "p1" is Succeeded`},
		"an approval with an unknown state": {base: "awaiting", entry: "Decide Approve",
			mut: func(s *Status) { s.Approvals[0].State = "Maybe" }, wantMsg: `approval "p1-r1" has unknown state "Maybe"`},
		"a call with an unknown state": {base: "batch", entry: "Step",
			mut: func(s *Status) { s.Calls[0].State = "Weird" }, wantMsg: `call "s1" has unknown state "Weird"`},
		"a call with an unknown state, at resolve": {base: "uncertain", entry: "Decide Resolve",
			mut: func(s *Status) { s.Calls[1].State = "Weird" }, wantMsg: `call "p2" has unknown state "Weird"`},
		"two calls with one id": {base: "approved", entry: "Claim",
			mut: func(s *Status) { s.Calls[1].ID = s.Calls[0].ID }, wantMsg: `have the same id "s1"`},
		"two approvals with one id": {base: "awaiting", entry: "Decide Deny",
			mut: func(s *Status) { s.Approvals = append(s.Approvals, s.Approvals[0]) }, wantMsg: `approval id "p1-r1" appears twice`},
		"a call past the cursor's step": {base: "uncertain", entry: "Decide Resolve",
			mut: func(s *Status) { s.Calls[0].Step = 7 }, wantMsg: `call "p1" belongs to step 7, outside steps 0..0`},
		"a negative step (an index out of range)": {base: "queued", entry: "Claim",
			mut: func(s *Status) { s.Cursor.Step = -1 }, wantMsg: "status.cursor.step is -1"},
		"a phase the engine does not know": {base: "awaiting", entry: "Decide Approve",
			mut: func(s *Status) { s.Phase = "Paused" }, wantMsg: `status.phase "Paused" is not a phase of AgentRun`},
		"an unknown cursor stage": {base: "approved", entry: "Claim",
			mut: func(s *Status) { s.Cursor.Stage = "Sideways" }, wantMsg: `cursor.stage "Sideways" is not Request, Batch or Finish`},
		"a call without an id": {base: "inflight", entry: "Step",
			mut: func(s *Status) { s.Calls[1].ID = "" }, wantMsg: "status.calls[1] has no id"},
		"calls that do not match the model's response": {base: "batch", entry: "Step",
			mut: func(s *Status) { s.Calls[0].ID = "other" }, wantMsg: `calls of step 0 do not match the response`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := bases[tc.base]
			s := clone(b.s)
			tc.mut(&s)
			before := mustJSON(t, s)
			got, err := callSafely(t, byName[tc.entry], s, b.env, t0.Add(time.Second))
			e, ok := AsError(err)
			if !ok || e.Reason != exagentv1.ReasonCorruptStatus || !IsPermanent(err) {
				t.Fatalf("%s: error %v, want a permanent error with reason %s", tc.entry, err, exagentv1.ReasonCorruptStatus)
			}
			if !strings.Contains(e.Message, tc.wantMsg) || !strings.Contains(e.Message, "create a new run") {
				t.Errorf("message %q\nwant it to contain %q and what to do", e.Message, tc.wantMsg)
			}
			if mustJSON(t, got) != before {
				t.Errorf("an error must return the state unchanged")
			}
			failed := endAsCaller(t, s, err)
			if failed.Phase != exagentv1.PhaseFailed || failed.Reason != exagentv1.ReasonCorruptStatus || failed.Claim != nil {
				t.Errorf("after Fail: phase %s reason %s claim %v", failed.Phase, failed.Reason, failed.Claim)
			}
		})
	}
	t.Run("a cancel still stops a corrupt run", func(t *testing.T) {
		s := clone(bases["awaiting"].s)
		s.Approvals[0].CallID = "ghost"
		got, err := callSafely(t, byName["Decide Cancel"], s, bases["awaiting"].env, t0)
		if err != nil || got.Phase != exagentv1.PhaseCancelled {
			t.Fatalf("Cancel: %v, phase %s", err, got.Phase)
		}
	})
}

// FuzzCorruptStatus corrupts states the engine reaches with random edits
// (states, ids, steps, indexes, phases, omitted parts) and feeds them to
// every entry point: none may panic, every error is the engine's typed
// error, and a status that fails the integrity check is never accepted by
// a transition that reads it (Step, Claim, Approve, Deny, Resolve) — each
// refuses, so the caller ends the run (permanent errors) or waits.
func FuzzCorruptStatus(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0, 1}, {1, 1, 2, 0}, {2, 2, 3, 4}, {3, 3, 1, 9}, {4, 4, 0, 200}, {5, 5, 7, 3},
		{0, 6, 0, 0, 7, 1, 8, 2}, {2, 9, 1, 1, 10, 0}, {3, 11, 5, 12, 0}, {1, 13, 2, 14, 3, 15, 4},
	} {
		f.Add(seed)
	}
	bases := corruptBases(f)
	names := []string{"awaiting", "approved", "uncertain", "inflight", "batch", "queued"}
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) == 0 {
			return
		}
		b := bases[names[int(prog[0])%len(names)]]
		s := clone(b.s)
		for i := 1; i+2 < len(prog)+1 && i < 40; i += 3 {
			corrupt(&s, prog[i:min(i+3, len(prog))])
		}
		integrityErr := checkIntegrity(&s)
		for _, e := range entries() {
			got, err := callSafely(t, e, s, b.env, t0.Add(time.Second))
			if err != nil {
				if _, ok := AsError(err); !ok {
					t.Fatalf("%s: untyped error %v", e.name, err)
				}
				// An ended run (a Resolve of a Cancelled one) has nothing to
				// fail: the decision is only refused.
				if IsPermanent(err) && !s.Phase.IsTerminal() {
					if failed := endAsCaller(t, s, err); failed.Phase != exagentv1.PhaseFailed {
						t.Fatalf("%s: Fail after %v gave phase %s", e.name, err, failed.Phase)
					}
				}
				continue
			}
			if integrityErr == nil {
				continue
			}
			switch e.name {
			case "Step", "Claim", "Decide Approve", "Decide Deny", "Decide Resolve":
				t.Fatalf("%s accepted a corrupt status (%v): phase %s", e.name, integrityErr, got.Phase)
			}
		}
	})
}

// corrupt applies one edit chosen by op to s; arg picks the entry and value.
func corrupt(s *Status, b []byte) {
	at := func(i int) byte {
		if i < len(b) {
			return b[i]
		}
		return 0
	}
	op, arg, val := at(0), int(at(1)), at(2)
	pickCall := func() *exagentv1.ToolCall {
		if len(s.Calls) == 0 {
			return nil
		}
		return &s.Calls[arg%len(s.Calls)]
	}
	pickApproval := func() *exagentv1.Approval {
		if len(s.Approvals) == 0 {
			return nil
		}
		return &s.Approvals[arg%len(s.Approvals)]
	}
	states := []exagentv1.CallState{"", "Weird", exagentv1.CallStarted, exagentv1.CallSucceeded, exagentv1.CallUncertain, exagentv1.CallPending, exagentv1.CallApproved}
	phases := []exagentv1.RunPhase{"", "Paused", exagentv1.PhaseRunning, exagentv1.PhaseAwaitingApproval, exagentv1.PhaseApproved, exagentv1.PhaseUncertain, exagentv1.PhaseQueued, exagentv1.PhaseCancelled}
	switch op % 16 {
	case 0:
		if c := pickCall(); c != nil {
			c.State = states[int(val)%len(states)]
		}
	case 1:
		if c := pickCall(); c != nil {
			c.ID = []string{"", "ghost", "s1", "p1", "p2"}[int(val)%5]
		}
	case 2:
		if c := pickCall(); c != nil {
			c.Step = int32(val) - 100
		}
	case 3:
		if a := pickApproval(); a != nil {
			a.CallID = []string{"", "ghost", "s1", "p1", "p2"}[int(val)%5]
		}
	case 4:
		if a := pickApproval(); a != nil {
			a.State = []exagentv1.ApprovalState{"", "Maybe", exagentv1.ApprovalPending, exagentv1.ApprovalApproved}[int(val)%4]
		}
	case 5:
		s.Phase = phases[int(val)%len(phases)]
	case 6:
		s.Cursor.Step = int32(val) - 100
	case 7:
		s.Cursor.Stage = []exagentv1.Stage{"", "Sideways", exagentv1.StageBatch, exagentv1.StageFinish, exagentv1.StageRequest}[int(val)%5]
	case 8:
		if len(s.Calls) > 0 {
			s.Calls = append(s.Calls[:arg%len(s.Calls)], s.Calls[arg%len(s.Calls)+1:]...)
		}
	case 9:
		if len(s.Approvals) > 0 {
			s.Approvals = append(s.Approvals, s.Approvals[arg%len(s.Approvals)])
		}
	case 10:
		if len(s.History) > 0 {
			s.History = s.History[:int(val)%len(s.History)]
		}
	case 11:
		if c := pickCall(); c != nil {
			c.Outcome = nil
		}
	case 12:
		if s.Claim != nil {
			s.Claim = nil
		} else {
			s.Claim = &exagentv1.Claim{Holder: w1, Attempt: int64(val)}
		}
	case 13:
		s.PendingApprovals = int32(val) - 100
	case 14:
		s.Binding = nil
	case 15:
		if len(s.Calls) > 0 {
			s.Calls = append(s.Calls, s.Calls[arg%len(s.Calls)])
			s.Calls[len(s.Calls)-1].ID = fmt.Sprintf("x%d", val)
		}
	}
}
