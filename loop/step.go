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
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Step is the loop driver. Given the owned state, it advances to the next
// action and records that action's intent in the returned state: the
// caller commits the state by compare-and-swap and only then performs the
// action's IO (docs/architecture.md §4.1). In order:
//
//  1. Tool calls of this attempt in flight → ActWait (nothing else may
//     happen while an effect is open; a call started by an older attempt is
//     Uncertain).
//  2. The deadline has passed → Expired (DeadlineExceeded), ActFail.
//  3. At Finish → Succeeded with the model's last answer, ActFinish.
//  4. At a batch: Proposed calls get the policy (Allowed/Pending/Refused).
//     An Uncertain call → run Uncertain, ActFail OutcomeUncertain (uncertain
//     beats paused). Allowed and Approved calls are re-checked and begun →
//     ActRunTools with only those newly started. Then Pending calls → Pause,
//     ActPause. Otherwise every call is closed: the tool messages join the
//     transcript in the model's order and the cursor moves to the next step.
//  5. At a request: a request of this attempt outstanding → ActWait; else a
//     new intent (a request of an older attempt was lost and is re-sent,
//     charged again, at most maxModelResends times per step, then the run
//     ends Failed, ModelRequestRetriesExhausted) → ActCallModel.
//
// Limits (maxSteps, maxToolCalls, maxTokens, active time) end the run
// Failed with reason LimitExceeded before the IO that would pass them.
// They are the stricter of the Agent's current ones and those the run
// journaled at its first claim (status.limits, limits.go).
// Errors leave the state unchanged: KindStaleFence (stop), and the
// permanent kinds (InvalidContinuation, TooLarge) that the caller ends
// with Fail.
func Step(s Status, env *Env, f Fence, now time.Time) (Status, Action, error) {
	env = env.forRun(&s) // the limits the run journaled bound it too (limits.go)
	if err := checkFence(&s, f, now); err != nil {
		return s, Action{}, err
	}
	if err := validateContinuation(&s); err != nil {
		return s, Action{}, err
	}
	st := clone(s)
	act, err := drive(&st, env, f, now)
	if err != nil {
		return s, Action{}, err
	}
	return st, act, nil
}

func drive(st *Status, env *Env, f Fence, now time.Time) (Action, error) {
	for i := range st.Calls {
		if c := &st.Calls[i]; inFlight(c) && c.Attempt != f.Attempt {
			loseIntent(st, env, c) // an older owner's intent with no outcome (delegate.go)
		}
	}
	if anyCall(st, inFlight) {
		return Action{Kind: ActWait}, nil
	}
	if d := env.deadline(); d != nil && !now.Before(*d) {
		if anyCall(st, isUncertain) {
			return goUncertain(st, env, now), nil
		}
		endRun(st, env, now, exagentv1.PhaseExpired, exagentv1.ReasonDeadlineExceeded,
			fmt.Sprintf("the deadline %s passed", d.Format(time.RFC3339)))
		return failAction(st), nil
	}
	if st.Turn != nil && st.Turn.Human {
		if act, ok := driveParticipant(st, env, now); ok { // conversation_human.go
			return act, nil
		}
	}
	switch st.Cursor.Stage {
	case exagentv1.StageFinish:
		return finish(st, env, now)
	case exagentv1.StageBatch:
		act, done, err := driveBatch(st, env, f, now)
		if err != nil || done {
			return act, err
		}
	}
	return requestModel(st, env, f, now)
}

func finish(st *Status, env *Env, now time.Time) (Action, error) {
	if anyCall(st, isUncertain) {
		return goUncertain(st, env, now), nil
	}
	last := &st.History[len(st.History)-1]
	st.Output = bound(last.Content, maxContent)
	if last.ContentRef != nil && last.Content == "" {
		// The answer was sealed into a segment: the status points to it
		// (Seal keeps a beginning of it in output only when it was inline).
		ref := *last.ContentRef
		st.OutputRef = &ref
	}
	markEnd(st, st.Output) // conversation_end.go
	releaseClaim(st, env, now)
	setPhase(st, exagentv1.PhaseSucceeded, exagentv1.ReasonSucceeded, "the model gave its final answer")
	return Action{Kind: ActFinish, Output: st.Output}, nil
}

// driveBatch returns done=false when the batch closed and the driver
// should go on to the next model request.
func driveBatch(st *Status, env *Env, f Fence, now time.Time) (Action, bool, error) {
	admitProposed(st, env)
	if anyCall(st, isUncertain) {
		return goUncertain(st, env, now), true, nil
	}
	if act, ok, err := driveSampling(st, env, f, now); ok || err != nil { // mcpsample.go
		return act, true, err
	}
	var ready []string
	for _, i := range stepCalls(st) {
		if c := &st.Calls[i]; c.State == exagentv1.CallAllowed || c.State == exagentv1.CallApproved {
			ready = append(ready, c.ID)
		}
	}
	if len(ready) > 0 {
		if act, ok := checkIOLimits(st, env, now); !ok {
			return act, true, nil
		}
		if reserve := int64(len(ready)) * toolResultReserve; !transcriptRoom(st, env, reserve) {
			return transcriptTooLarge(st, env, now, fmt.Sprintf("%d tool call(s)", len(ready)), reserve), true, nil
		}
		started, err := beginEffect(st, env, f, ready, now)
		switch {
		case IsKind(err, KindLimitExceeded):
			e, _ := AsError(err)
			return limitExceeded(st, env, now, "%s", e.Message), true, nil
		case err != nil:
			return Action{}, true, err
		case len(started) > 0:
			return Action{Kind: ActRunTools, Calls: started}, true, nil
		}
	}
	for _, i := range stepCalls(st) {
		if st.Calls[i].State == exagentv1.CallPending {
			created, err := pause(st, env, now)
			if err != nil {
				return Action{}, true, err
			}
			return Action{Kind: ActPause, Approvals: created, Reason: st.Reason, Message: st.Message}, true, nil
		}
	}
	if wakeDue(st, now); anyCall(st, waiting) && !anyCall(st, delegated) && !withdrawing(st, nil) {
		return goWaiting(st, env, now), true, nil // wait.go
	}
	if anyCall(st, delegated) || withdrawing(st, nil) {
		// Children work, or withdrawn ones are still to end and be charged:
		// the batch closes once every one of them did (delegate.go, withdraw.go).
		return awaitChildren(st, env, now), true, nil
	}
	if err := closeBatch(st); err != nil {
		return Action{}, true, err
	}
	return Action{}, false, nil
}

// closeBatch answers every call of the step in the model's order and moves
// the cursor to the next step's request.
func closeBatch(st *Status) error {
	for _, i := range stepCalls(st) {
		c := &st.Calls[i]
		if unresolved(c) || c.Outcome == nil {
			return invalidf("call %q is %s when its batch closes", c.ID, c.State)
		}
		msg := exagentv1.Message{Role: exagentv1.RoleTool, ToolCallID: c.ID}
		switch {
		case c.Outcome.ResultRef != nil:
			// Stored once: the message points to the sealed result.
			ref := *c.Outcome.ResultRef
			msg.ContentRef = &ref
		case c.State == exagentv1.CallFailed:
			msg.Content = bound("Error: "+c.Outcome.Result, maxContent)
		default:
			msg.Content = bound(c.Outcome.Result, maxContent)
		}
		appendMessage(st, msg)
	}
	st.Cursor.Step++
	st.Cursor.Stage = exagentv1.StageRequest
	st.Cursor.ModelRequest = nil
	return nil
}

func requestModel(st *Status, env *Env, f Fence, now time.Time) (Action, error) {
	lost := st.Cursor.ModelRequest
	if lost != nil && lost.Attempt == f.Attempt {
		return Action{Kind: ActWait}, nil
	}
	if m := env.limits().MaxSteps; m != nil && stepsUsed(st)+held(st).steps >= int64(*m) {
		switch {
		case st.Ledger.ChildRequests == 0 && held(st).steps == 0 && st.Ledger.SamplingRequests == 0:
			return limitExceeded(st, env, now, "limit maxSteps (%d) reached", *m), nil
		case st.Ledger.ChildRequests == 0 && held(st).steps == 0:
			return limitExceeded(st, env, now, "limit maxSteps (%d) reached: %d steps of this run, %d MCP sampling requests",
				*m, st.Cursor.Step, st.Ledger.SamplingRequests), nil
		}
		return limitExceeded(st, env, now, "limit maxSteps (%d) reached: %d steps of this run, %d MCP sampling requests, "+
			"%d model requests of its child runs, %d held by child runs", *m, st.Cursor.Step, st.Ledger.SamplingRequests,
			st.Ledger.ChildRequests, held(st).steps), nil
	}
	if act, ok := checkIOLimits(st, env, now); !ok {
		return act, nil
	}
	if m := env.limits().MaxTokens; m != nil && tokensUsed(st)+held(st).tokens >= *m {
		return limitExceeded(st, env, now, "limit maxTokens (%d) reached: %d used, %d held by child runs", *m,
			tokensUsed(st), held(st).tokens), nil
	}
	if !transcriptRoom(st, env, modelResponseReserve) {
		return transcriptTooLarge(st, env, now, "the next model request", modelResponseReserve), nil
	}
	if env.budgetHold != "" {
		// An AgentBudget is used up: handed back before anything of the
		// step is sent, so nothing is charged (budget.go).
		return holdForBudget(st, env, now), nil
	}
	if lost != nil {
		// An older attempt's request whose answer never got committed:
		// re-sent and charged again, a bounded number of times per step.
		if act, ok := countModelResend(st, env, lost, now); !ok {
			return act, nil
		}
	}
	st.Ledger.Requests++
	st.Cursor.ModelRequest = &exagentv1.ModelRequestIntent{Attempt: f.Attempt, Request: st.Ledger.Requests}
	if err := checkSize(st, env, env.budget/ioReserveDivisor, "model request"); err != nil {
		return Action{}, err
	}
	msgs := make([]exagentv1.Message, len(st.History))
	for i := range st.History {
		st.History[i].DeepCopyInto(&msgs[i])
	}
	req := &ModelRequest{Step: st.Cursor.Step, Request: st.Ledger.Requests, Messages: msgs, Tools: env.Tools()}
	instructions, later := turnInstructions(st, env)
	if h := st.Transcript; h != nil && h.Segments > 0 {
		sealed := *h
		req.Sealed = &sealed
		if later {
			req.Instructions = &instructions
		}
	} else if later {
		req.Messages = LeadWith(msgs, &instructions)
	}
	return Action{Kind: ActCallModel, Model: req}, nil
}

// checkIOLimits ends the run before an IO when tokens or active time are
// used up.
func checkIOLimits(st *Status, env *Env, now time.Time) (Action, bool) {
	if m := env.limits().MaxTokens; m != nil && st.Ledger.PromptTokens+st.Ledger.CompletionTokens >= *m {
		return limitExceeded(st, env, now, "limit maxTokens (%d) reached: %d used", *m,
			st.Ledger.PromptTokens+st.Ledger.CompletionTokens), false
	}
	if activeExhausted(st, env, now) {
		limit, _ := env.ActiveTimeLimit()
		return limitExceeded(st, env, now, "limit activeTime (%s) reached", limit), false
	}
	return Action{}, true
}

// goUncertain stops the run for a human to Resolve the calls that have no
// confirmed outcome. The revision is bumped: resolutions bind it.
func goUncertain(st *Status, env *Env, now time.Time) Action {
	var ids []string
	for i := range st.Calls {
		if isUncertain(&st.Calls[i]) {
			ids = append(ids, fmt.Sprintf("%s (%s)", st.Calls[i].ID, st.Calls[i].Tool))
		}
	}
	st.Revision++
	releaseClaim(st, env, now)
	setPhase(st, exagentv1.PhaseUncertain, exagentv1.ReasonOutcomeUncertain,
		fmt.Sprintf("no confirmed outcome for %s: resolve with evidence (Succeeded, Failed or Retry)", strings.Join(ids, ", ")))
	return failAction(st)
}
