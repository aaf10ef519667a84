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
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// admitProposed applies the current policy to the Proposed calls of the
// step: Allow → Allowed, Ask → Pending, Deny → Refused (the model is told).
// A tool the current Agent does not have, or arguments its parameters
// schema rejects, is a failed call the model sees, not a crash: it is
// checked before policy, so even an Allow never lets it run, and no human
// is asked to approve a call that could not be made.
func admitProposed(st *Status, env *Env) {
	for _, i := range stepCalls(st) {
		c := &st.Calls[i]
		if c.State != exagentv1.CallProposed {
			continue
		}
		if env.tool(c.Tool) == nil {
			failUnknownTool(c, env)
			continue
		}
		if msg := env.toolUnavailable(c.Tool); msg != "" {
			failUnavailable(c, msg)
			continue
		}
		if err := env.checkArgs(c.Tool, c.Args); err != nil {
			failInvalidArgs(c, err)
			continue
		}
		if !checkWait(st, c, env) { // wait.go
			continue
		}
		noteMCP(c, env)
		action, rule := env.policy.EvaluateTool(c.Tool, env.toolAnnotations(c.Tool), json.RawMessage(c.Args))
		c.Rule, c.Policy = truncateUTF8(rule, maxRule), env.binding.Policy
		if env.isAskHuman(c.Tool) {
			admitQuestion(c, env, action, rule) // question.go
			continue
		}
		if env.isEndConversation(c.Tool) && action == exagentv1.PolicyAllow {
			endConversation(st, c) // conversation_end.go
			continue
		}
		switch {
		case action == exagentv1.PolicyAllow:
			c.State = exagentv1.CallAllowed
		case action == exagentv1.PolicyDeny:
			refuse(c, rule)
		case allowByGrant(st, env, c, rule): // grants.go
			c.State = exagentv1.CallAllowed
		default:
			c.State = exagentv1.CallPending
		}
	}
}

func failUnknownTool(c *exagentv1.ToolCall, env *Env) {
	names := make([]string, 0, len(env.tools))
	for _, t := range env.tools {
		names = append(names, t.Name)
	}
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{Result: bound(fmt.Sprintf("%s: there is no tool %q; the tools are: %s",
		exagentv1.ReasonUnknownTool, c.Tool, strings.Join(names, ", ")), maxContent)}
}

// failUnavailable ends a call of an mcp tool its server does not offer (any
// more): the model is told, nothing runs.
func failUnavailable(c *exagentv1.ToolCall, msg string) {
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{Result: bound(msg, maxContent)}
}

// failInvalidArgs ends a call whose arguments do not match its tool's
// schema, with the validator's findings (field path and what is wrong,
// bounded) so the model can correct the call. It never runs.
func failInvalidArgs(c *exagentv1.ToolCall, err error) {
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{Result: bound(fmt.Sprintf(
		"%s: the arguments do not match the parameters schema of tool %q: %v. The call was not run.",
		exagentv1.ReasonInvalidArguments, c.Tool, err), maxContent)}
}

func refuse(c *exagentv1.ToolCall, rule string) {
	if rule == "" {
		rule = "default"
	}
	c.State = exagentv1.CallRefused
	c.Outcome = &exagentv1.CallOutcome{Result: fmt.Sprintf("Refused by policy (rule %s): the call was not run.", rule)}
}

// BeginEffect records the intents of the given calls (docs/architecture.md §4.1:
// intent before IO). Each call is first re-evaluated against the *current*
// policy and tool schema:
//
//   - the args no longer match the current schema → a failed call the
//     model sees (checked first: no approval or policy makes it valid);
//   - policy Deny now → Refused (a stricter current policy wins);
//   - the payload hash changed (schema, effect configuration such as an
//     http URL or a builtin's kinds, policy or definition fingerprint) for
//     a call a human approved → Pending again: the old approval does not
//     cover the new payload, and a looser policy grants nothing retroactively;
//   - policy Ask and no approval covers the current payload → Pending;
//   - the tool is gone (from the Agent, or from its MCP server's
//     tools/list) → a failed call the model sees;
//   - a delegation call first begun: its child's entry is journaled in
//     status.children (the child's deterministic name and what is reserved
//     for it, reserve.go); when nothing is left to reserve → a failed call
//     the model sees (LimitExceeded), never begun;
//   - otherwise → Started with the attempt and the idempotency key
//     runUID/callID (kept across re-sends; "/edit-<argsHash>" appended
//     for an edited call, so each version of the arguments has its own).
//
// Touches: calls (state, rule, payloadHash, attempt, idempotencyKey,
// startedAt), ledger.toolCalls (once per call, on its first start: a
// persisted batch is never admitted twice), children (+ the new entries).
// Guards: the fence; each call is of the current step and Allowed or
// Approved; maxToolCalls, counting what children hold; the state leaves
// room for the outcomes.
func BeginEffect(s Status, env *Env, f Fence, callIDs []string, now time.Time) (Status, error) {
	env = env.forRun(&s) // the limits the run holds (limits.go)
	if err := checkFence(&s, f, now); err != nil {
		return s, err
	}
	st := clone(s)
	if _, err := beginEffect(&st, env, f, callIDs, now); err != nil {
		return s, err
	}
	return st, nil
}

// beginEffect is BeginEffect on a state the caller owns; it returns the
// calls that were started.
func beginEffect(st *Status, env *Env, f Fence, callIDs []string, now time.Time) ([]ToolInvocation, error) {
	idx := make([]int, 0, len(callIDs))
	newAdmissions := int64(0)
	for _, id := range callIDs {
		i := findCall(st, id)
		if i < 0 {
			return nil, notPendingf("no call %q", id)
		}
		c := &st.Calls[i]
		if c.Step != st.Cursor.Step || st.Cursor.Stage != exagentv1.StageBatch {
			return nil, notPendingf("call %q is not of the current batch", id)
		}
		if c.State != exagentv1.CallAllowed && c.State != exagentv1.CallApproved {
			return nil, notPendingf("call %q is %s, not Allowed or Approved", id, c.State)
		}
		if c.IdempotencyKey == "" {
			newAdmissions++
		}
		idx = append(idx, i)
	}
	if m := env.limits().MaxToolCalls; m != nil && st.Ledger.ToolCalls+newAdmissions+held(st).toolCalls > int64(*m) {
		return nil, errorf(KindLimitExceeded, exagentv1.ReasonLimitExceeded,
			"limit maxToolCalls (%d) reached: %d calls made, %d held by child runs, %d more requested",
			*m, st.Ledger.ToolCalls, held(st).toolCalls, newAdmissions)
	}
	ready := idx[:0:0]
	for _, i := range idx {
		if recheck(st, env, &st.Calls[i]) {
			ready = append(ready, i)
		}
	}
	refused := reserveChildren(st, env, ready) // reserve.go
	var started []ToolInvocation
	for _, i := range ready {
		c := &st.Calls[i]
		if why, ok := refused[c.ID]; ok {
			refuseChild(c, why)
			continue
		}
		if c.IdempotencyKey == "" {
			st.Ledger.ToolCalls++
		}
		if env.isEndConversation(c.Tool) {
			endConversation(st, c) // touches nothing: no IO (conversation_end.go)
			continue
		}
		if env.waitKind(c.Tool) != "" {
			beginWait(st, c, env, f, now) // a wait, no IO (wait.go)
			continue
		}
		if env.isNewCallback(c.Tool) {
			newCallback(st, c, env, now) // a URL, no IO (wait_callback.go)
			continue
		}
		c.IdempotencyKey = env.callIdempotencyKey(c)
		c.State = exagentv1.CallStarted
		c.Attempt = f.Attempt
		c.StartedAt = microTimePtr(now)
		started = append(started, invocation(c))
	}
	if len(started) > 0 {
		if err := checkSize(st, env, env.budget/ioReserveDivisor, "tool calls"); err != nil {
			return nil, err
		}
	}
	return started, nil
}

// recheck re-evaluates one call against the current configuration and
// reports whether it may start; otherwise it moves the call on.
func recheck(st *Status, env *Env, c *exagentv1.ToolCall) bool {
	if env.tool(c.Tool) == nil {
		failUnknownTool(c, env)
		return false
	}
	if msg := env.toolUnavailable(c.Tool); msg != "" {
		failUnavailable(c, msg)
		return false
	}
	if err := env.checkArgs(c.Tool, c.Args); err != nil {
		failInvalidArgs(c, err)
		return false
	}
	cur, err := env.payloadHash(c.Tool, c.Args)
	if err != nil {
		// Stored args that no longer canonicalize cannot be bound: ask.
		c.State = exagentv1.CallPending
		return false
	}
	noteMCP(c, env)
	action, rule := env.policy.EvaluateTool(c.Tool, env.toolAnnotations(c.Tool), json.RawMessage(c.Args))
	c.Policy = env.binding.Policy
	if action == exagentv1.PolicyDeny {
		c.Rule = truncateUTF8(rule, maxRule)
		refuse(c, rule)
		return false
	}
	changed := cur != c.PayloadHash
	if c.State == exagentv1.CallApproved && changed {
		c.PayloadHash, c.Rule, c.State = cur, truncateUTF8(rule, maxRule), exagentv1.CallPending
		return false
	}
	if action == exagentv1.PolicyAsk && !approvalCovers(st, c.ID, cur) && !allowByGrant(st, env, c, rule) {
		c.PayloadHash, c.Rule, c.State = cur, truncateUTF8(rule, maxRule), exagentv1.CallPending
		return false
	}
	c.PayloadHash = cur
	return true
}

// approvalCovers reports whether a human approved this call's exact payload.
func approvalCovers(st *Status, callID, payloadHash string) bool {
	for i := range st.Approvals {
		a := &st.Approvals[i]
		if a.CallID == callID && a.State == exagentv1.ApprovalApproved && approvedHash(a) == payloadHash {
			return true
		}
	}
	return false
}

func invocation(c *exagentv1.ToolCall) ToolInvocation {
	inv := ToolInvocation{
		CallID: c.ID, Tool: c.Tool, Args: json.RawMessage(c.Args),
		IdempotencyKey: c.IdempotencyKey, Attempt: c.Attempt,
	}
	if in := c.Input; in != nil && in.Responses != "" {
		inv.InputRound, inv.InputResponses, inv.RequestState = in.Round, json.RawMessage(in.Responses), in.RequestState
	}
	return inv
}

// RecordOutcome confirms what a started call did (docs/architecture.md §4.2). An
// Unknown result means the effect may have happened: the call becomes
// Uncertain and only a Resolve moves it on. A result too large for the
// budget is shortened (the model sees the mark); if not even an empty
// result fits, the outcome is refused and the call stays in flight, to end
// Uncertain: a larger outcome is never traded for a retry.
//
// Touches: the call's state and outcome.
// Guards: the fence; the call is Started by this very attempt (a stale
// attempt never confirms).
func RecordOutcome(s Status, env *Env, f Fence, r ToolResult, now time.Time) (Status, error) {
	if err := checkFence(&s, f, now); err != nil {
		return s, err
	}
	i := findCall(&s, r.CallID)
	if i < 0 {
		return s, notPendingf("no call %q", r.CallID)
	}
	if c := &s.Calls[i]; c.State != exagentv1.CallStarted {
		return s, notPendingf("call %q is %s, not Started", r.CallID, c.State)
	} else if c.Wait != nil {
		return s, notPendingf("call %q waits (%s): it has no outcome to record", r.CallID, c.Wait.Kind)
	} else if c.Attempt != f.Attempt {
		return s, staleFencef("call %q was started by attempt %d, not %d", r.CallID, c.Attempt, f.Attempt)
	}
	st := clone(s)
	c := &st.Calls[i]
	switch r.Kind {
	case ResultUnknown:
		c.State = exagentv1.CallUncertain
		return st, nil
	case ResultInputRequired:
		// Nothing happened yet: the server waits for answers (mcpinput.go).
		recordInputRequired(c, env, r)
		if hotSize(&st, env.in.ValueBytes) > env.budget {
			return s, errorf(KindTooLarge, exagentv1.ReasonStatusTooLarge,
				"the input requests of call %q do not fit the status budget of %d bytes", r.CallID, env.budget)
		}
		return st, nil
	case ResultSucceeded:
		c.State = exagentv1.CallSucceeded
	case ResultFailed:
		c.State = exagentv1.CallFailed
	default:
		return s, conflictf("result kind %q is not Succeeded, Failed, Unknown or InputRequired", r.Kind)
	}
	c.Outcome = &exagentv1.CallOutcome{Succeeded: r.Kind == ResultSucceeded, At: microTimePtr(now)}
	note := editNote(c) // an approver edited the call: the model is told (approve.go)
	output := note + r.Output
	out := bound(output, maxContent)
	for {
		c.Outcome.Result = out
		if hotSize(&st, env.in.ValueBytes) <= env.budget {
			return st, nil
		}
		if out == "" {
			return s, errorf(KindTooLarge, exagentv1.ReasonStatusTooLarge,
				"the outcome of call %q does not fit the status budget of %d bytes", r.CallID, env.budget)
		}
		out = bound(output, len(out)/2)
	}
}

// Outstanding returns the tool calls whose intents the fence's attempt
// committed and whose outcomes are not recorded yet, in the model's order:
// what an owner that lost track of its executor (but not its claim) still
// has to wait for or re-dispatch under the same idempotency keys.
func Outstanding(s Status, f Fence) []ToolInvocation {
	var out []ToolInvocation
	for i := range s.Calls {
		if c := &s.Calls[i]; inFlight(c) && c.Attempt == f.Attempt {
			out = append(out, invocation(c))
		}
	}
	return out
}
