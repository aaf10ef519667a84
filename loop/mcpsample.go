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
	"maps"
	"slices"
	"strings"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
)

// MCP sampling (docs/architecture.md §16): a server answering tools/call
// with input_required may ask the client's model for a completion
// (sampling/createMessage). Unless mcp.sampling says Deny, the run's own
// model answers it as a model request of its own: intent first (the
// cursor's modelRequest names the call and the input request, the
// ledger's request counter charges it), then the IO, then the answer
// journaled in calls[].input.samples with its tokens charged. A lost
// answer is re-sent and charged again, as any model request. With Ask a
// person approves each sampling request first (a question of source
// MCPSampling). Only the server's own text messages are sent: the run's
// transcript is never shared (includeContext is ignored) and tools are
// not offered.
//
// A sampling request spends what the run's own requests spend: it counts
// against maxSteps (ledger.samplingRequests, once per request: a re-send
// of a lost one is charged in requests but is no new step) and its tokens
// against maxTokens, both counting what the run's children hold, so a
// server that keeps asking cannot take a run — or, through a child's
// reservation, its ancestors — past its limits. One model request is
// kept for the run itself to read the batch: a sampling request that
// would take it is refused, and its call fails with LimitExceeded (the
// model is told, as for a delegation call nothing is left for). With no
// tokens left the run ends LimitExceeded, as before any model request;
// otherwise the request's maxTokens is at most the tokens left, so only
// its prompt can pass maxTokens, as any request's answer can.

const (
	samplingMethod = "sampling/createMessage"
	// maxSamplingMessages bounds the messages of one sampling request.
	maxSamplingMessages = 32
	// defaultSamplingTokens caps a sampling request's maxTokens when the
	// Agent's model sets no maxCompletionTokens: a server's number,
	// untrusted, would otherwise spend the run's budget.
	defaultSamplingTokens = 4096
	// maxSampleText bounds one journaled answer (8 of them fit samples).
	maxSampleText = 7 << 10
	// samplingApproveSchema is the answer schema of an Ask question.
	samplingApproveSchema = `{"enum":["approve"],"type":"string"}`
)

// samplingParams is what exagent reads of a sampling/createMessage request.
type samplingParams struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	SystemPrompt string `json:"systemPrompt"`
	MaxTokens    int64  `json:"maxTokens"`
}

// sampling is one checked sampling request.
type sampling struct {
	messages  []exagentv1.Message
	maxTokens int64
}

// checkSampling checks sampling request id of a server: text messages of
// the user or the assistant, a positive maxTokens.
func checkSampling(id string, r inputRequest) (sampling, error) {
	var p samplingParams
	if err := json.Unmarshal(r.Params, &p); err != nil {
		return sampling{}, fmt.Errorf("sampling request %s: its params are not a createMessage request: %v", id, err)
	}
	switch n := len(p.Messages); {
	case n == 0:
		return sampling{}, fmt.Errorf("sampling request %s has no messages", id)
	case n > maxSamplingMessages:
		return sampling{}, fmt.Errorf("sampling request %s has %d messages, more than %d", id, n, maxSamplingMessages)
	}
	if p.MaxTokens <= 0 {
		return sampling{}, fmt.Errorf("sampling request %s: maxTokens must be positive, not %d", id, p.MaxTokens)
	}
	var out sampling
	out.maxTokens = p.MaxTokens
	if sp := strings.TrimSpace(p.SystemPrompt); sp != "" {
		out.messages = append(out.messages, exagentv1.Message{Role: exagentv1.RoleSystem, Content: sp})
	}
	for k, m := range p.Messages {
		role := exagentv1.MessageRole(m.Role)
		if role != exagentv1.RoleUser && role != exagentv1.RoleAssistant {
			return sampling{}, fmt.Errorf("sampling request %s: message %d has role %q, not user or assistant", id, k, truncateUTF8(m.Role, 32))
		}
		text, err := samplingText(m.Content)
		if err != nil {
			return sampling{}, fmt.Errorf("sampling request %s: message %d: %w", id, k, err)
		}
		out.messages = append(out.messages, exagentv1.Message{Role: role, Content: text})
	}
	return out, nil
}

// samplingText is the text of a message's content: one text block or a
// list of them. Images, audio, tool uses and tool results are refused:
// exagent sends only text to the run's model on a server's behalf.
func samplingText(raw json.RawMessage) (string, error) {
	type block struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	var blocks []block
	var one block
	if err := json.Unmarshal(raw, &one); err == nil {
		blocks = []block{one}
	} else if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", fmt.Errorf("its content is neither a content block nor a list of them")
	}
	var parts []string
	for _, b := range blocks {
		if b.Type != "text" || b.Text == nil {
			return "", fmt.Errorf("content of type %q: only text is sent to the run's model", truncateUTF8(b.Type, 32))
		}
		parts = append(parts, *b.Text)
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("its content is empty")
	}
	return strings.Join(parts, "\n"), nil
}

// samplingPolicy is the tool's mcp.sampling, Allow when unset.
func (e *Env) samplingPolicy(tool string) exagentv1.MCPSamplingPolicy {
	if t := e.tool(tool); t != nil && t.MCP != nil && t.MCP.Sampling != "" {
		return t.MCP.Sampling
	}
	return exagentv1.SamplingAllow
}

// samplingTokens is the maxTokens a sampling request is sent with: the
// server's, at most the model's maxCompletionTokens (else
// defaultSamplingTokens).
func (e *Env) samplingTokens(server int64) int64 {
	limit := int64(defaultSamplingTokens)
	if m := e.in.Agent.Model.MaxCompletionTokens; m != nil && *m > 0 {
		limit = *m
	}
	return min(server, limit)
}

// samplingQuestion is the question an Ask policy puts to a person.
func samplingQuestion(id, tool string, s sampling) *exagentv1.Question {
	last := s.messages[len(s.messages)-1].Content
	text := fmt.Sprintf("The MCP server of tool %q asks the run's model for a completion (at most %d tokens, %d message(s), "+
		"charged to this run). Its last message: %s — answer \"approve\" to send it, or decline.", tool, s.maxTokens, len(s.messages),
		truncateUTF8(last, 1024))
	return &exagentv1.Question{Source: exagentv1.QuestionMCPSampling, Text: truncateUTF8(text, maxQuestionText), RequestID: id,
		Schema: samplingApproveSchema}
}

// samplesOf are the answers journaled for call c (request id → result).
func samplesOf(c *exagentv1.ToolCall) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	if c.Input != nil && c.Input.Samples != "" {
		_ = json.Unmarshal([]byte(c.Input.Samples), &out)
	}
	return out
}

// nextSampling is the first sampling request of pending call c that may be
// sent now: not answered yet, and under Ask approved by a person (no
// question of the call still open).
func nextSampling(st *Status, env *Env, c *exagentv1.ToolCall) (string, sampling, bool) {
	if !awaitsInput(c) {
		return "", sampling{}, false
	}
	reqs, err := parseInputRequests([]byte(c.Input.Requests))
	if err != nil {
		return "", sampling{}, false
	}
	ask := env.samplingPolicy(c.Tool) == exagentv1.SamplingAsk
	answers := latestInputAnswers(st, c)
	if ask && answers == nil {
		return "", sampling{}, false // a question of the call is open
	}
	done := samplesOf(c)
	for _, id := range slices.Sorted(maps.Keys(reqs)) {
		if reqs[id].Method != samplingMethod || done[id] != nil {
			continue
		}
		if ask {
			a := answers[id]
			if a == nil || a.State != exagentv1.ApprovalAnswered || a.Question.Action != exagentv1.AnswerAccept {
				continue
			}
		}
		s, err := checkSampling(id, reqs[id])
		if err != nil {
			continue // checked when recorded: not reached
		}
		return id, s, true
	}
	return "", sampling{}, false
}

// latestInputAnswers is the latest question of call c for each input
// request, or nil while one is still pending.
func latestInputAnswers(st *Status, c *exagentv1.ToolCall) map[string]*exagentv1.Approval {
	latest := map[string]*exagentv1.Approval{}
	for i := range st.Approvals {
		a := &st.Approvals[i]
		if a.CallID != c.ID || !isMCPQuestion(a) {
			continue
		}
		if a.State == exagentv1.ApprovalPending {
			return nil
		}
		latest[a.Question.RequestID] = a
	}
	return latest
}

// driveSampling sends the batch's next sampling request, waits for one of
// this attempt, or re-sends one an older attempt lost. ok=false when the
// batch has none to send.
func driveSampling(st *Status, env *Env, f Fence, now time.Time) (Action, bool, error) {
	refuseDeniedSampling(st, env) // the current Agent's mcp.sampling first (mcpinput.go)
	lost := st.Cursor.ModelRequest
	if lost != nil && lost.Attempt == f.Attempt {
		return Action{Kind: ActWait}, true, nil
	}
	var c *exagentv1.ToolCall
	var id string
	var s sampling
	var resend bool
	for _, i := range stepCalls(st) {
		rid, rs, ok := nextSampling(st, env, &st.Calls[i])
		if !ok {
			continue
		}
		resend = lost != nil && lost.CallID == st.Calls[i].ID && lost.InputRequest == rid
		if why := samplingOverSteps(st, env); why != "" && !resend {
			refuseSampling(&st.Calls[i], rid, why)
			continue
		}
		c, id, s = &st.Calls[i], rid, rs
		break
	}
	if c == nil {
		if lost != nil {
			st.Cursor.ModelRequest = nil // its call ended meanwhile (cancelled, expired)
		}
		return Action{}, false, nil
	}
	if act, ok := checkIOLimits(st, env, now); !ok {
		return act, true, nil
	}
	maxTokens := env.samplingTokens(s.maxTokens)
	if m := env.limits().MaxTokens; m != nil {
		left := *m - tokensUsed(st) - held(st).tokens
		if left <= 0 {
			return limitExceeded(st, env, now, "limit maxTokens (%d) reached: %d used, %d held by child runs", *m,
				tokensUsed(st), held(st).tokens), true, nil
		}
		maxTokens = min(maxTokens, left)
	}
	if lost != nil {
		if act, ok := countModelResend(st, env, lost, now); !ok {
			return act, true, nil
		}
	}
	if !resend {
		st.Ledger.SamplingRequests++
	}
	st.Ledger.Requests++
	st.Cursor.ModelRequest = &exagentv1.ModelRequestIntent{Attempt: f.Attempt, Request: st.Ledger.Requests, CallID: c.ID, InputRequest: id}
	if err := checkSize(st, env, env.budget/ioReserveDivisor, "sampling request"); err != nil {
		return Action{}, true, err
	}
	return Action{Kind: ActCallModel, Model: &ModelRequest{Step: st.Cursor.Step, Request: st.Ledger.Requests, Messages: s.messages,
		Sampling: true, MaxTokens: maxTokens}}, true, nil
}

// samplingOverSteps says why a new sampling request would take the run
// past maxSteps ("" when it would not): the step's own request was made,
// and one more must be left, after it, for the run to read the batch —
// counting the sampling requests already answered, those of its children
// and what its live children hold.
func samplingOverSteps(st *Status, env *Env) string {
	m := env.limits().MaxSteps
	if m == nil {
		return ""
	}
	made, h := stepsUsed(st)+1, held(st).steps
	if made+1+h < int64(*m) {
		return ""
	}
	return fmt.Sprintf("limit maxSteps (%d) leaves no model request for it: %d made by this run and its child runs "+
		"(%d of them for MCP sampling requests), %d reserved for child runs, one kept for this run to read the answers",
		*m, made, st.Ledger.SamplingRequests, h)
}

// refuseSampling fails call c whose server's sampling request id the run
// cannot afford: a failed outcome the model sees, no model request made.
func refuseSampling(c *exagentv1.ToolCall, id, why string) {
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{Result: bound(fmt.Sprintf("%s: the MCP server of tool %q asked the run's model for a "+
		"completion (sampling request %s), but %s. The call was not completed.", exagentv1.ReasonLimitExceeded, c.Tool, id, why),
		maxContent)}
}

// recordSample journals the run's model's answer to the outstanding
// sampling request (RecordModelResponse's other half): its tokens are
// charged, the answer joins calls[].input.samples as MCP's
// CreateMessageResult, and the call goes on once nothing else is missing.
func recordSample(s Status, env *Env, r ModelResponse) (Status, error) {
	st := clone(s)
	m := st.Cursor.ModelRequest
	chargeAnswer(&st, env, r)
	i := findCall(&st, m.CallID)
	if i < 0 || !awaitsInput(&st.Calls[i]) {
		return st, nil // the call ended meanwhile: charged, not used
	}
	c := &st.Calls[i]
	samples := samplesOf(c)
	result, err := json.Marshal(map[string]any{
		"role":       "assistant",
		"content":    map[string]any{"type": "text", "text": truncateUTF8(r.Content, maxSampleText)},
		"model":      truncateUTF8(env.in.Agent.Model.Name, 256),
		"stopReason": "endTurn",
	})
	if err != nil {
		return s, fmt.Errorf("sampling answer of call %q: %w", c.ID, err)
	}
	samples[m.InputRequest] = result
	canon, err := canonical.JSON(samples)
	if err != nil {
		return s, fmt.Errorf("sampling answers of call %q: %w", c.ID, err)
	}
	c.Input.Samples = string(canon)
	answerInput(&st, c)
	if err := checkSize(&st, env, 0, "sampling answer"); err != nil {
		return s, err
	}
	return st, nil
}
