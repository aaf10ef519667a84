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
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// FuzzEngine drives random command sequences from several actors — two
// workers (one of which may hold a stale fence), three deciders (one not an
// approver) and the clock — against one run, committing each accepted
// result as the controller would, and checks the engine's invariants after
// every step. The seed corpus (below and in testdata/fuzz/FuzzEngine) runs
// with plain `go test`; `go test ./loop -fuzz FuzzEngine` explores further.
func FuzzEngine(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, prog []byte) {
		newFuzzRun(t).run(prog)
	})
}

// Seed programs: pairs of (op, arg) bytes plus the extra bytes some ops
// read; see fuzzRun.apply. A is worker-a (arg 0), B is worker-b (arg 1).
var fuzzSeeds = [][]byte{
	// A claims, asks the model, gets a text answer, finishes.
	{1, 0, 2, 0, 3, 0, 0, 2, 0},
	// Batch search+pay: search runs, pay pauses, alice approves, B resumes and finishes.
	{1, 0, 2, 0, 3, 0, 2, 2, 0, 5, 0, 0, 0, 2, 0, 9, 0, 0, 1, 0, 1, 1, 2, 1, 5, 1, 0, 0, 2, 1, 3, 1, 0, 2, 1},
	// Everything allowed; A crashes after the intent; recover → Uncertain; alice resolves; B finishes.
	{17, 0, 1, 1, 0, 2, 0, 3, 0, 1, 2, 0, 0, 0, 2, 13, 0, 11, 0, 0, 2, 0, 1, 1, 2, 1, 3, 1, 0, 2, 1},
	// Crash, Resolve Retry; B re-runs with the same key; the stale A tries to confirm and is refused.
	{17, 0, 1, 1, 0, 2, 0, 3, 0, 1, 2, 0, 0, 0, 2, 13, 0, 11, 0, 9, 3, 0, 1, 1, 2, 1, 5, 0, 0, 0, 5, 1, 0, 0, 2, 1},
	// onDeny Continue: bob denies pay; the model is told; the run goes on.
	{17, 0, 3, 1, 0, 2, 0, 3, 0, 2, 2, 0, 5, 0, 0, 0, 2, 0, 9, 0, 4, 1, 0, 1, 1, 2, 1, 3, 1, 0, 2, 1},
	// onDeny Stop: a deny ends the run Denied.
	{1, 0, 2, 0, 3, 0, 1, 2, 0, 9, 0, 4, 1, 0, 2, 0},
	// mallory is not an approver; then the approval expires.
	{1, 0, 2, 0, 3, 0, 1, 2, 0, 9, 0, 2, 1, 0, 0, 0, 4, 9, 0, 0, 1, 0, 12, 0},
	// Unknown outcome among siblings: uncertain beats paused; cancel.
	{1, 0, 2, 0, 3, 0, 2, 2, 0, 5, 0, 2, 0, 2, 0, 10, 0, 0, 0},
	// Duplicate ids, unknown tool and bad args in one turn; model failures.
	{17, 0, 1, 1, 0, 2, 0, 3, 0, 3, 2, 0, 5, 0, 0, 0, 5, 0, 0, 0, 2, 0, 4, 0, 2, 0, 4, 0, 2, 0, 4, 0},
	// A stricter policy arrives while paused; approval, then begin-effect refuses.
	{1, 0, 2, 0, 3, 0, 1, 2, 0, 17, 0, 2, 9, 0, 0, 1, 0, 1, 1, 2, 1, 2, 1},
	// Renew, checkpoint, release, reclaim by B; A's fence is stale.
	{1, 0, 0, 0, 1, 6, 0, 7, 0, 8, 0, 1, 1, 2, 0, 2, 1, 14, 1, 15, 1, 0, 16, 0},
}

type fuzzWorker struct {
	name  string
	fence Fence
	tools []ToolInvocation
}

type fuzzRun struct {
	t       *testing.T
	envs    []*Env
	env     *Env
	s       Status
	now     time.Time
	workers []*fuzzWorker
	ops     int
	trace   []string
}

func newFuzzRun(t *testing.T) *fuzzRun {
	base := func() *fixture.AgentWrapper {
		return MakeAgent().HTTPTool("search", true).HTTPTool("pay", false).Approvers("alice", "bob").
			MaxSteps(6).MaxToolCalls(8).MaxTokens(400).ActiveTime("10m")
	}
	// activeTimeLimit unset: each Agent variant's limits.activeTime applies
	// (the allow-all one has none, so runs survive a crash there).
	run := MakeRun().Deadline(t0.Add(48 * time.Hour)).ApprovalTimeout("1h").Spec()
	r := &fuzzRun{t: t, now: t0}
	for _, a := range []*exagentv1.AgentSpec{
		base().Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(),
		base().Default(exagentv1.PolicyAllow).ActiveTime(exagentv1.Never).Spec(),
		base().Rule("search-ok", exagentv1.PolicyAllow, "", "search").Rule("cap", exagentv1.PolicyDeny, "args.amount > 200", "pay").Spec(),
		base().Rule("search-ok", exagentv1.PolicyAllow, "", "search").OnDeny(exagentv1.OnDenyContinue).Spec(),
	} {
		r.envs = append(r.envs, mustEnv(t, a, run))
	}
	r.env = r.envs[0]
	r.workers = []*fuzzWorker{{name: "worker-a"}, {name: "worker-b"}}
	s, err := Start(Status{}, r.env, r.now)
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	return r
}

func (r *fuzzRun) run(prog []byte) {
	pos := 0
	next := func() byte {
		if pos >= len(prog) {
			return 0
		}
		pos++
		return prog[pos-1]
	}
	for pos < len(prog) && r.ops < 400 {
		r.ops++
		op, arg := opKind(next()), next()
		if op == opAutopilot {
			var extra []byte
			op, arg, extra = r.autopilot(arg, next)
			next := func() byte {
				if len(extra) == 0 {
					return 0
				}
				b := extra[0]
				extra = extra[1:]
				return b
			}
			r.apply(op, arg, next)
			continue
		}
		r.apply(op, arg, next)
	}
}

// opKind maps a program byte to a command. Bytes 0–17 name each command
// once (the seeds use them); 18–27 are the autopilot (the natural next
// move, so random programs get deep runs); 28–31 repeat constructive
// commands. Cancel and Fail answer to one byte value only, so that random
// programs rarely end the run early.
func opKind(b byte) byte {
	k := b % 32
	if (k == 10 || k == 16) && b != k {
		return 2 // Cancel and Fail only from their own byte
	}
	if k < 28 {
		return min(k, opAutopilot)
	}
	return []byte{2, 5, 9, 13}[k-28]
}

const opAutopilot = 18

// autopilot chooses the move a live system would make next: claim a
// runnable run, answer the model, confirm a tool, approve or resolve as
// alice, or let a foreign lease run out. It returns the command and the
// bytes it reads.
func (r *fuzzRun) autopilot(arg byte, next func() byte) (op, warg byte, extra []byte) {
	warg = 0
	if arg%4 == 1 {
		warg = 1
	}
	w, s := r.workers[warg], r.s
	switch s.Phase {
	case exagentv1.PhaseQueued, exagentv1.PhaseApproved:
		return 1, warg, nil
	case exagentv1.PhaseRunning:
		if s.Claim.Holder != w.name || s.Claim.Attempt != w.fence.Attempt {
			if !r.now.Before(s.Claim.LeaseExpiresAt.Time) {
				return 13, warg, nil
			}
			return 0, warg, []byte{6} // 31s: the other worker's lease runs out
		}
		if m := s.Cursor.ModelRequest; m != nil && m.Attempt == w.fence.Attempt {
			return 3, warg, []byte{next()}
		}
		if len(w.tools) > 0 {
			kind := []byte{0, 0, 0, 0, 0, 0, 1, 2}[next()%8] // mostly Succeeded
			return 5, warg, []byte{kind, 0}
		}
		return 2, warg, nil
	case exagentv1.PhaseAwaitingApproval:
		for i, a := range s.Approvals {
			if a.State == exagentv1.ApprovalPending {
				b := byte(0) // alice approves
				if next()%8 == 0 {
					b = 12 // alice denies
				}
				return 9, warg, []byte{b, next(), byte(i)}
			}
		}
	case exagentv1.PhaseUncertain:
		for i, c := range s.Calls {
			if c.State == exagentv1.CallUncertain {
				b := []byte{0, 0, 18, 9}[next()%4] // alice: Succeeded, Succeeded, Failed, Retry
				return 11, warg, []byte{b, next(), byte(i)}
			}
		}
	}
	return 0, warg, []byte{0}
}

// apply runs one command and, when the engine accepts it, commits the
// result after checking the invariants between the two states.
func (r *fuzzRun) apply(op, arg byte, next func() byte) {
	w := r.workers[0] // worker-a mostly; worker-b (arg%4 == 1) competes and goes stale
	if arg%4 == 1 {
		w = r.workers[1]
	}
	prev := r.s
	before := mustJSON(r.t, prev)
	var (
		got     Status
		act     Action
		err     error
		name    string
		outcome *ToolResult
		dec     *DecisionCmd
	)
	switch op {
	case 0:
		// Mostly short steps (work within a lease); sometimes a lost lease,
		// an expired approval, or a day towards the 48h deadline.
		steps := []time.Duration{time.Second, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 10 * time.Second,
			31 * time.Second, 31 * time.Second, 5 * time.Minute, 5 * time.Minute, 11 * time.Minute, 61 * time.Minute,
			time.Second, time.Second, 3 * time.Second, 25 * time.Hour}
		r.now = r.now.Add(steps[int(next())%len(steps)])
		return
	case 1:
		name = "Claim " + w.name
		var f Fence
		got, f, err = Claim(prev, r.env, w.name, r.now)
		if err == nil {
			w.fence, w.tools = f, nil
		}
	case 2:
		name = "Step " + w.name
		got, act, err = Step(prev, r.env, w.fence, r.now)
	case 3:
		name = "RecordModelResponse " + w.name
		got, err = RecordModelResponse(prev, r.env, w.fence, r.response(next()), r.now)
	case 4:
		name = "RecordModelFailure " + w.name
		got, err = RecordModelFailure(prev, r.env, w.fence, "boom", r.now)
	case 5:
		res := ToolResult{Kind: []ResultKind{ResultSucceeded, ResultFailed, ResultUnknown}[int(next())%3], Output: "out"}
		if len(w.tools) > 0 {
			i := int(next()) % len(w.tools)
			res.CallID = w.tools[i].CallID
			w.tools = append(w.tools[:i], w.tools[i+1:]...)
		} else if len(prev.Calls) > 0 {
			res.CallID = prev.Calls[int(next())%len(prev.Calls)].ID
		}
		outcome = &res
		name = "RecordOutcome " + w.name + " " + res.CallID + " " + string(res.Kind)
		got, err = RecordOutcome(prev, r.env, w.fence, res, r.now)
	case 6:
		name = "Extend " + w.name
		got, err = Extend(prev, r.env, w.fence, r.now)
	case 7:
		name = "Checkpoint " + w.name
		got, err = Checkpoint(prev, r.env, w.fence, r.now)
	case 8:
		name = "Release " + w.name
		got, err = Release(prev, r.env, w.fence, r.now)
	case 9, 10, 11:
		d := r.decision(op, next)
		dec = &d
		name = fmt.Sprintf("Decide %s %s%s by %s rev %d op %s", d.Decision, d.ApprovalID, d.CallID, d.Actor.Username, d.Revision, d.OperationID)
		got, _, err = Decide(prev, r.env, d, r.now)
	case 12:
		name = "Expire"
		got, _, err = Expire(prev, r.env, r.now)
	case 13:
		name = "Recover"
		got, err = Recover(prev, r.env, r.now)
	case 14:
		name = "Pause " + w.name
		got, err = Pause(prev, r.env, w.fence, r.now)
	case 15:
		var ids []string
		if len(prev.Calls) > 0 {
			ids = []string{prev.Calls[int(next())%len(prev.Calls)].ID}
		}
		name = fmt.Sprintf("BeginEffect %s %v", w.name, ids)
		got, err = BeginEffect(prev, r.env, w.fence, ids, r.now)
	case 16:
		name = "Fail"
		got, err = Fail(prev, "Injected", "fuzz", r.now)
	case 17:
		r.env = r.envs[int(next())%len(r.envs)]
		r.trace = append(r.trace, "policy changed")
		return
	}
	r.trace = append(r.trace, name)
	if mustJSON(r.t, prev) != before {
		r.fail("%s mutated its input", name)
	}
	if err != nil {
		if _, ok := AsError(err); !ok {
			r.fail("%s: untyped error %v", name, err)
		}
		if mustJSON(r.t, got) != before {
			r.fail("%s returned an error and a changed state", name)
		}
		return
	}
	r.check(name, op, prev, got, w, outcome, dec)
	if act.Kind == ActRunTools {
		w.tools = append(w.tools, act.Calls...)
	}
	r.s = got
}

func (r *fuzzRun) response(b byte) ModelResponse {
	amount := int(b) * 3
	switch b % 4 {
	case 0:
		return ModelResponse{Content: "done", PromptTokens: 20, CompletionTokens: 5}
	case 1:
		return tools(call("", "pay", fmt.Sprintf(`{"amount":%d}`, amount)))
	case 2:
		return tools(call("", "search", `{"q":"x"}`), call("", "pay", fmt.Sprintf(`{"amount":%d}`, amount)))
	}
	return tools(call("dup", "search", `{}`), call("dup", "nope", `{}`), call("", "pay", `{"amount":"x"}`))
}

// decision builds a decision that is usually aimed at something real but
// sometimes carries the wrong actor, revision, payload or a reused operation.
func (r *fuzzRun) decision(op byte, next func() byte) DecisionCmd {
	b := next()
	actors := []string{"alice", "bob", "mallory"}
	d := DecisionCmd{Actor: actor(actors[int(b)%3]), OperationID: fmt.Sprintf("op-%d", next()%6), Reason: "fuzz", Revision: r.s.Revision}
	switch op {
	case 9:
		d.Decision = []exagentv1.DecisionKind{exagentv1.DecisionApprove, exagentv1.DecisionDeny}[int(b>>2)%2]
		if n := len(r.s.Approvals); n > 0 {
			a := r.s.Approvals[int(next())%n]
			d.ApprovalID, d.PayloadHash, d.Revision = a.ID, a.PayloadHash, a.Revision
		}
	case 10:
		d.Decision = exagentv1.DecisionCancel
	case 11:
		d.Decision = exagentv1.DecisionResolve
		d.Outcome = []exagentv1.ResolveOutcome{exagentv1.ResolveSucceeded, exagentv1.ResolveFailed, exagentv1.ResolveRetry}[int(b>>2)%3]
		if n := len(r.s.Calls); n > 0 {
			c := r.s.Calls[int(next())%n]
			d.CallID, d.PayloadHash = c.ID, c.PayloadHash
		}
	}
	if b&0x40 != 0 {
		d.Revision-- // an old revision
	}
	if b&0x80 != 0 {
		d.PayloadHash = "sha256:tampered"
	}
	return d
}

func (r *fuzzRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("after %d ops (%v): %s", r.ops, r.trace, fmt.Sprintf(format, args...))
}

// check asserts the invariants between a committed state and the next.
func (r *fuzzRun) check(name string, op byte, prev, got Status, w *fuzzWorker, outcome *ToolResult, dec *DecisionCmd) {
	r.t.Helper()
	// Terminal phases are absorbing. The one change an ended run takes is
	// a Resolve of a Cancelled run's Uncertain call, for the record: the
	// call gets its outcome, and nothing else but the receipt and message.
	if prev.Phase.IsTerminal() && !cmp.Equal(prev, got) {
		if !recordOnly(prev, got, dec) {
			r.fail("%s changed a %s run", name, prev.Phase)
		}
	}
	// Ledger counters, revision and attempts never decrease.
	pl, gl := prev.Ledger, got.Ledger
	if gl.Requests < pl.Requests || gl.ToolCalls < pl.ToolCalls || gl.PromptTokens < pl.PromptTokens ||
		gl.CompletionTokens < pl.CompletionTokens || gl.ActiveTimeUsed.Duration < pl.ActiveTimeUsed.Duration ||
		got.Revision < prev.Revision || got.Attempts < prev.Attempts {
		r.fail("%s decreased a counter: %+v → %+v", name, pl, gl)
	}
	// Only the engine's own limit checks can let usage pass a limit by one request's tokens.
	if gl.ToolCalls > 8 {
		r.fail("%s: %d tool calls admitted over maxToolCalls 8", name, gl.ToolCalls)
	}
	// The claim exists exactly while the run is Running.
	if (got.Claim != nil) != (got.Phase == exagentv1.PhaseRunning) {
		r.fail("%s: phase %s with claim %v", name, got.Phase, got.Claim)
	}
	// pendingApprovals is kept current.
	n := int32(0)
	for _, a := range got.Approvals {
		if a.State == exagentv1.ApprovalPending {
			n++
		}
	}
	if n != got.PendingApprovals {
		r.fail("%s: pendingApprovals %d, %d pending", name, got.PendingApprovals, n)
	}
	// A non-terminal run is always a valid continuation.
	if !got.Phase.IsTerminal() {
		if err := validateContinuation(&got); err != nil {
			r.fail("%s produced an invalid continuation: %v", name, err)
		}
	}
	prevCalls := map[string]exagentv1.ToolCall{}
	for _, c := range prev.Calls {
		prevCalls[c.ID] = c
	}
	for _, c := range got.Calls {
		p, existed := prevCalls[c.ID]
		// No effect begins without a committed intent by the current owner.
		if c.State == exagentv1.CallStarted && (!existed || p.State != exagentv1.CallStarted) {
			if op != 2 && op != 15 || got.Claim == nil || c.Attempt != got.Claim.Attempt || !strings.HasPrefix(c.IdempotencyKey, runUID+"/"+c.ID) ||
				c.StartedAt == nil || prev.Claim == nil || prev.Claim.Attempt != w.fence.Attempt {
				r.fail("%s started %s without a fenced intent", name, c.ID)
			}
		}
		// No outcome is confirmed by a stale attempt.
		if existed && p.State == exagentv1.CallStarted && c.State != exagentv1.CallStarted && c.Outcome != nil && c.Outcome.ResolvedBy == "" {
			if outcome == nil || outcome.CallID != c.ID || prev.Claim == nil || prev.Claim.Attempt != w.fence.Attempt ||
				p.Attempt != w.fence.Attempt || !r.now.Before(prev.Claim.LeaseExpiresAt.Time) {
				r.fail("%s confirmed %s without the current fence", name, c.ID)
			}
		}
		// A confirmed outcome is never lost or rewritten by the owner.
		if existed && p.Outcome != nil && (c.Outcome == nil || !cmp.Equal(p.Outcome, c.Outcome)) {
			r.fail("%s rewrote the outcome of %s", name, c.ID)
		}
	}
	prevApprovals := map[string]exagentv1.Approval{}
	for _, a := range prev.Approvals {
		prevApprovals[a.ID] = a
	}
	for _, a := range got.Approvals {
		p, existed := prevApprovals[a.ID]
		// At most one decision is applied per approval.
		if existed && p.State != exagentv1.ApprovalPending && !cmp.Equal(p, a) {
			r.fail("%s changed decided approval %s (%s → %s)", name, a.ID, p.State, a.State)
		}
		// No approve after expiry (or the deadline), and only by an approver.
		if a.State == exagentv1.ApprovalApproved && existed && p.State == exagentv1.ApprovalPending {
			if a.ExpiresAt != nil && !r.now.Before(a.ExpiresAt.Time) {
				r.fail("%s approved %s at %s after its expiry %s", name, a.ID, r.now, a.ExpiresAt.Time)
			}
			if dl := r.env.deadline(); dl != nil && !r.now.Before(*dl) {
				r.fail("%s approved %s after the deadline", name, a.ID)
			}
			if dec == nil || dec.Actor.Username == "mallory" || dec.PayloadHash != a.PayloadHash || dec.Revision != a.Revision {
				r.fail("%s approved %s without a matching, authorized decision", name, a.ID)
			}
		}
	}
	for _, rc := range got.Receipts {
		if rc.Actor != nil && rc.Actor.Username == "mallory" {
			r.fail("%s applied a decision by a non-approver", name)
		}
	}
	decided := map[string]int{}
	for _, rc := range got.Receipts {
		if rc.Decision == string(exagentv1.DecisionApprove) || rc.Decision == string(exagentv1.DecisionDeny) {
			decided[rc.Target]++
			if decided[rc.Target] > 1 {
				r.fail("%s: approval %s has %d decisions", name, rc.Target, decided[rc.Target])
			}
		}
	}
	// The committed bytes are the continuation: JSON round trip is lossless.
	b, err := json.Marshal(got)
	if err != nil {
		r.fail("%s: encode: %v", name, err)
	}
	var back Status
	if err := json.Unmarshal(b, &back); err != nil || !cmp.Equal(got, back) {
		r.fail("%s: JSON round trip lost data: %v %s", name, err, cmp.Diff(got, back))
	}
}

// recordOnly reports whether got is prev with one Uncertain call of a
// Cancelled run closed by the Resolve dec, and its receipt.
func recordOnly(prev, got Status, dec *DecisionCmd) bool {
	if dec == nil || dec.Decision != exagentv1.DecisionResolve || prev.Phase != exagentv1.PhaseCancelled ||
		got.Phase != exagentv1.PhaseCancelled || got.Reason != prev.Reason || len(got.Receipts) != len(prev.Receipts)+1 {
		return false
	}
	i := findCall(&prev, dec.CallID)
	if i < 0 || prev.Calls[i].State != exagentv1.CallUncertain {
		return false
	}
	if c := got.Calls[i]; (c.State != exagentv1.CallSucceeded && c.State != exagentv1.CallFailed) || c.Outcome == nil {
		return false
	}
	want := clone(prev)
	want.Calls[i] = got.Calls[i]
	want.Receipts = got.Receipts
	want.Message = got.Message
	return cmp.Equal(want, got)
}
