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
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
	"github.com/exagent-io/exagent/internal/segment"
)

// RecordModelResponse confirms the outcome of the outstanding model request
// of the current attempt: the assistant message joins the transcript and
// its tool calls join the journal as Proposed (Step admits them).
//
// Touches: history (+assistant), calls (+Proposed, or Failed for arguments
// that are not JSON), cursor (stage Batch or Finish, modelRequest nil,
// modelFailures 0, modelResends 0), ledger tokens.
// Guards: the fence; a model request of this attempt is outstanding; the
// state still fits the size budget. A response with more tool calls than a
// message may hold is a failed request (RecordModelFailure).
func RecordModelResponse(s Status, env *Env, f Fence, r ModelResponse, now time.Time) (Status, error) {
	env = env.forRun(&s)
	if err := checkModelOutstanding(&s, f, now); err != nil {
		return s, err
	}
	if s.Cursor.ModelRequest.CallID != "" {
		return recordSample(s, env, r) // an MCP server's sampling request (mcpsample.go)
	}
	if len(r.ToolCalls) > maxToolCalls {
		return RecordModelFailure(s, env, f,
			fmt.Sprintf("the model asked for %d tool calls in one turn; at most %d are accepted", len(r.ToolCalls), maxToolCalls), now)
	}
	st := clone(s)
	chargeAnswer(&st, env, r)

	msg := exagentv1.Message{Role: exagentv1.RoleAssistant, Content: bound(r.Content, maxContent)}
	used := map[string]bool{}
	for id := range r.PriorCallIDs {
		used[id] = true
	}
	for i := range st.Calls {
		used[st.Calls[i].ID] = true
	}
	for k, tc := range r.ToolCalls {
		id := callID(tc.ID, st.Cursor.Step, k, used)
		used[id] = true
		call, err := proposeCall(env, id, st.Cursor.Step, tc)
		if err != nil {
			return s, err
		}
		st.Calls = append(st.Calls, call)
		msg.ToolCalls = append(msg.ToolCalls, exagentv1.MessageToolCall{ID: id, Name: call.Tool, Arguments: call.Args})
	}
	if n := segment.MessageBytes(&msg); !transcriptRoom(&st, env, n) {
		// Recorded as the request's answer (its tokens are charged), but its
		// text never joins the transcript: the limit holds.
		transcriptTooLarge(&st, env, now, fmt.Sprintf("the model's answer (%d bytes)", n), n)
		return st, nil
	}
	appendMessage(&st, msg)
	if len(msg.ToolCalls) > 0 {
		st.Cursor.Stage = exagentv1.StageBatch
	} else {
		st.Cursor.Stage = exagentv1.StageFinish
	}
	if err := checkSize(&st, env, 0, "model response"); err != nil {
		return s, err
	}
	return st, nil
}

// callID keeps the model's id when it is usable and unique in the run
// (idempotency keys and Resolve target it); otherwise it derives one from
// the step and position, which a replay derives identically.
func callID(id string, step int32, k int, used map[string]bool) string {
	if id != "" && len(id) <= maxID && !used[id] {
		return id
	}
	gen := fmt.Sprintf("call-%d-%d", step, k)
	for n := 1; used[gen]; n++ {
		gen = fmt.Sprintf("call-%d-%d-%d", step, k, n)
	}
	return gen
}

// proposeCall journals one requested call with its canonical args and the
// payload hash an approval would bind. Arguments that are not JSON (or too
// large to store) become a failed call the model is told about.
func proposeCall(env *Env, id string, step int32, tc exagentv1.MessageToolCall) (exagentv1.ToolCall, error) {
	call := exagentv1.ToolCall{ID: id, Step: step, Tool: truncateUTF8(tc.Name, maxID), State: exagentv1.CallProposed}
	raw := tc.Arguments
	if raw == "" {
		raw = "{}"
	}
	canon, err := canonical.JSON(json.RawMessage(raw))
	switch {
	case err != nil:
		call.Args = bound(raw, maxContent)
		call.State = exagentv1.CallFailed
		call.Outcome = &exagentv1.CallOutcome{Result: bound(fmt.Sprintf("%s: the arguments are not valid JSON: %v", exagentv1.ReasonInvalidArguments, err), maxContent)}
		return call, nil
	case len(canon) > maxContent:
		call.Args = bound(string(canon), maxContent)
		call.State = exagentv1.CallFailed
		call.Outcome = &exagentv1.CallOutcome{Result: fmt.Sprintf("%s: the arguments take %d bytes, more than %d", exagentv1.ReasonInvalidArguments, len(canon), maxContent)}
		return call, nil
	}
	call.Args = string(canon)
	call.ArgsHash = canonical.Hash(canon)
	ph, err := env.payloadHash(call.Tool, call.Args)
	if err != nil {
		return call, fmt.Errorf("payload hash of call %q: %w", id, err)
	}
	call.PayloadHash = ph
	return call, nil
}

// RecordModelFailure confirms that the outstanding model request failed.
// A model request has no side effect: it was charged when its intent was
// recorded and the next Step simply sends a new one (charged again). After
// maxModelFailures consecutive failures the run ends Failed (ModelError).
//
// Touches: cursor.modelRequest (nil), cursor.modelFailures, and on the last
// failure phase/reason/message/claim.
// Guards: the fence; a model request of this attempt is outstanding.
func RecordModelFailure(s Status, env *Env, f Fence, message string, now time.Time) (Status, error) {
	env = env.forRun(&s)
	if err := checkModelOutstanding(&s, f, now); err != nil {
		return s, err
	}
	st := clone(s)
	st.Cursor.ModelRequest = nil
	st.Cursor.ModelFailures++
	if st.Cursor.ModelFailures >= maxModelFailures {
		endRun(&st, env, now, exagentv1.PhaseFailed, exagentv1.ReasonModelError,
			fmt.Sprintf("%d consecutive model requests failed; last: %s", st.Cursor.ModelFailures, message))
		return st, nil
	}
	st.Message = bound(fmt.Sprintf("model request failed (%d of %d): %s", st.Cursor.ModelFailures, maxModelFailures, message), maxMessage)
	return st, nil
}

// maxModelResends bounds, per step, the re-sends of a model request whose
// answer was lost. A lost answer has no side effect but is paid for; an
// owner that keeps losing it (a lease shorter than the model's answer, a
// crash loop) would otherwise re-send it for ever.
const maxModelResends = 3

// countModelResend charges one re-send of the step's lost model request,
// or ends the run Failed (ModelRequestRetriesExhausted) when the step has
// used its re-sends. A failure recorded by RecordModelFailure is not a lost
// answer: it has its own bound (maxModelFailures).
//
// Touches: cursor.modelResends, and on the last loss
// phase/reason/message/claim.
func countModelResend(st *Status, env *Env, lost *exagentv1.ModelRequestIntent, now time.Time) (Action, bool) {
	if st.Cursor.ModelResends >= maxModelResends {
		endRun(st, env, now, exagentv1.PhaseFailed, exagentv1.ReasonModelRequestRetriesExhausted, fmt.Sprintf(
			"the answer to the model request of step %d was lost %d times (last sent by attempt %d as request %d): "+
				"each time its owner crashed, lost its lease (leaseDuration %s) or stopped before committing it, "+
				"and each re-send was charged. Check the manager's restarts and logs and that the lease outlasts "+
				"a model answer, then create the run again",
			st.Cursor.Step, st.Cursor.ModelResends+1, lost.Attempt, lost.Request, env.lease))
		return failAction(st), false
	}
	st.Cursor.ModelResends++
	return Action{}, true
}

func checkModelOutstanding(s *Status, f Fence, now time.Time) error {
	if err := checkFence(s, f, now); err != nil {
		return err
	}
	m := s.Cursor.ModelRequest
	// A turn is requested at stage Request; a sampling request of an MCP
	// call (mcpsample.go) at stage Batch.
	stage := exagentv1.StageRequest
	if m != nil && m.CallID != "" {
		stage = exagentv1.StageBatch
	}
	if s.Cursor.Stage != stage || m == nil || m.Attempt != f.Attempt {
		return notPendingf("no model request of attempt %d is outstanding", f.Attempt)
	}
	return nil
}

// chargeAnswer charges an answered model request's tokens (a turn or a
// sampling request) and its cost at the Agent's pricing of this moment,
// and closes its intent: the cost is charged here, once, with the tokens.
func chargeAnswer(st *Status, env *Env, r ModelResponse) {
	st.Ledger.CostNanos += CostNanos(env.pricing, r)
	st.Ledger.PromptTokens += max(r.PromptTokens, 0)
	st.Ledger.CompletionTokens += max(r.CompletionTokens, 0)
	st.Ledger.CacheCreationTokens += max(r.CacheCreationTokens, 0)
	st.Ledger.CacheReadTokens += max(r.CacheReadTokens, 0)
	st.Cursor.ModelRequest = nil
	st.Cursor.ModelFailures = 0
	st.Cursor.ModelResends = 0
}
