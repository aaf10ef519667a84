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

// MCP input requests as durable pauses (docs/architecture.md §16). A
// server speaking MCP 2026-07-28 may answer tools/call with resultType
// input_required: inputRequests (here: elicitations) and an opaque
// requestState. Nothing happened yet, so the call is not Uncertain: it is
// journaled Pending with its requests (calls[].input), pause asks one
// question per request, and once every one is answered the call is
// Approved again with the responses, to be retried — intent first, as any
// call — with the same arguments, idempotency key, inputResponses and
// requestState. A server may ask again, mcp.maxInputRounds times at most.

const (
	// defaultMaxInputRounds is mcp.maxInputRounds' default.
	defaultMaxInputRounds = 5
	// maxInputRequestCount bounds the questions one round asks.
	maxInputRequestCount = 8
	// urlDoneSchema is the answer schema of a URL elicitation: the person
	// says they are done (or declines).
	urlDoneSchema = `{"enum":["done"],"type":"string"}`
)

// inputRequest is one entry of inputRequests, as the wire has it.
type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// elicitParams are the parameters of an elicitation/create request.
type elicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             string          `json:"url"`
}

// recordInputRequired journals an input_required answer to call c: the
// call waits Pending with its requests, or fails when the server asks too
// often, asks for more than fits, or asks for what exagent does not
// answer (roots, sampling under mcp.sampling Deny): the model is told.
func recordInputRequired(c *exagentv1.ToolCall, env *Env, r ToolResult) {
	round := int32(1)
	if c.Input != nil {
		round = c.Input.Round + 1
	}
	fail := func(format string, a ...any) {
		c.State = exagentv1.CallFailed
		c.Outcome = &exagentv1.CallOutcome{Result: bound(fmt.Sprintf(format, a...), maxContent)}
	}
	if max := env.maxInputRounds(c.Tool); round > max {
		fail("%s: the MCP server asked for input %d times to complete tool %q, more than mcp.maxInputRounds (%d); the call was not completed",
			exagentv1.ReasonMCPInputRefused, round, c.Tool, max)
		return
	}
	canon, err := canonical.JSON(r.InputRequests)
	switch {
	case err != nil:
		fail("%s: the MCP server's input requests are not JSON: %v", exagentv1.ReasonMCPInputRefused, err)
		return
	case len(canon) > maxInputRequests || len(r.RequestState) > maxInputRequests:
		fail("%s: the MCP server's input requests (%d bytes) or requestState (%d bytes) are larger than %d bytes; the call was not completed",
			exagentv1.ReasonMCPInputRefused, len(canon), len(r.RequestState), maxInputRequests)
		return
	}
	reqs, err := parseInputRequests(canon)
	if err != nil {
		fail("%s: %v; the call was not completed", exagentv1.ReasonMCPInputRefused, err)
		return
	}
	for _, id := range slices.Sorted(maps.Keys(reqs)) {
		if reqs[id].Method == samplingMethod { // mcpsample.go
			if env.samplingPolicy(c.Tool) == exagentv1.SamplingDeny {
				fail("%s: the MCP server asked the run's model for a completion (sampling request %s) and tool %q has "+
					"mcp.sampling Deny; the call was not completed", exagentv1.ReasonMCPInputRefused, id, c.Tool)
				return
			}
			if _, err := checkSampling(id, reqs[id]); err != nil {
				fail("%s: %v; the call was not completed", exagentv1.ReasonMCPInputRefused, err)
				return
			}
			continue
		}
		if _, err := questionOfInput(id, reqs[id]); err != nil {
			fail("%s: %v; the call was not completed", exagentv1.ReasonMCPInputRefused, err)
			return
		}
	}
	c.State = exagentv1.CallPending
	c.Outcome = nil
	c.Input = &exagentv1.CallInput{Round: round, Requests: string(canon), RequestState: r.RequestState}
}

func parseInputRequests(canon []byte) (map[string]inputRequest, error) {
	var reqs map[string]inputRequest
	if err := json.Unmarshal(canon, &reqs); err != nil || reqs == nil {
		return nil, fmt.Errorf("the MCP server's input requests are not a map of requests")
	}
	switch n := len(reqs); {
	case n == 0:
		return nil, fmt.Errorf("the MCP server answered input_required with no input requests")
	case n > maxInputRequestCount:
		return nil, fmt.Errorf("the MCP server asked %d questions at once, more than %d", n, maxInputRequestCount)
	}
	for id := range reqs {
		if id == "" || len(id) > exagentv1.MaxQuestionRequestIDLength {
			return nil, fmt.Errorf("the MCP server named an input request %q: ids are 1-%d characters",
				truncateUTF8(id, 140), exagentv1.MaxQuestionRequestIDLength)
		}
	}
	return reqs, nil
}

// questionOfInput is the question one elicitation asks a person. Other
// requests than elicitations and sampling (mcpsample.go), roots among
// them, are refused with what the server asked.
func questionOfInput(id string, r inputRequest) (*exagentv1.Question, error) {
	if r.Method != "elicitation/create" {
		return nil, fmt.Errorf("the MCP server asked for %q (input request %s), which exagent does not answer: only elicitations "+
			"(a form or a URL for a person) and sampling (the run's model) are answered", truncateUTF8(r.Method, 64), id)
	}
	var p elicitParams
	if err := json.Unmarshal(r.Params, &p); err != nil {
		return nil, fmt.Errorf("elicitation %s: its params are not an object: %v", id, err)
	}
	text := strings.TrimSpace(p.Message)
	if text == "" {
		return nil, fmt.Errorf("elicitation %s has no message for the person", id)
	}
	q := &exagentv1.Question{Text: truncateUTF8(text, maxQuestionText), RequestID: id}
	switch p.Mode {
	case "url":
		if origin := exagentv1.URLOrigin(p.URL); origin == "" || len(p.URL) > exagentv1.MaxQuestionURLLength {
			return nil, fmt.Errorf("elicitation %s: url %q is not an absolute http(s) URL of at most %d bytes",
				id, truncateUTF8(p.URL, 256), exagentv1.MaxQuestionURLLength)
		}
		q.Source, q.URL, q.Schema = exagentv1.QuestionMCPElicitationURL, p.URL, urlDoneSchema
		return q, nil
	case "", "form":
	default:
		return nil, fmt.Errorf("elicitation %s: mode %q is not form or url", id, truncateUTF8(p.Mode, 32))
	}
	schema, err := restrictedSchema(p.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("elicitation %s: %w", id, err)
	}
	q.Source, q.Schema = exagentv1.QuestionMCPElicitation, schema
	return q, nil
}

// restrictedSchema checks an elicitation's requestedSchema against MCP's
// restricted subset — a flat object whose properties are strings,
// numbers, integers, booleans or enums (a multi-select is an array of an
// enum) — and returns it canonical and compiled.
func restrictedSchema(raw json.RawMessage) (string, error) {
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.Type != "object" {
		return "", fmt.Errorf("requestedSchema must be an object schema (type \"object\"), as MCP's elicitation requires")
	}
	for name, prop := range s.Properties {
		var p struct {
			Type  any `json:"type"`
			Items *struct {
				Enum  []any `json:"enum"`
				AnyOf []any `json:"anyOf"`
			} `json:"items"`
		}
		if err := json.Unmarshal(prop, &p); err != nil {
			return "", fmt.Errorf("requestedSchema property %q is not a schema", truncateUTF8(name, 64))
		}
		switch p.Type {
		case "string", "number", "integer", "boolean":
		case "array":
			if p.Items == nil || (len(p.Items.Enum) == 0 && len(p.Items.AnyOf) == 0) {
				return "", fmt.Errorf("requestedSchema property %q is an array of something other than an enum, outside MCP's restricted subset", truncateUTF8(name, 64))
			}
		default:
			return "", fmt.Errorf("requestedSchema property %q has type %v, outside MCP's restricted subset (string, number, integer, boolean, enum)",
				truncateUTF8(name, 64), p.Type)
		}
	}
	canon, err := canonical.JSON(raw)
	if err != nil {
		return "", fmt.Errorf("requestedSchema is not JSON: %w", err)
	}
	if len(canon) > maxAnswerSchema {
		return "", fmt.Errorf("requestedSchema takes %d bytes, more than %d", len(canon), maxAnswerSchema)
	}
	if _, err := CompileArgSchema(canon); err != nil {
		return "", fmt.Errorf("requestedSchema is not a usable JSON Schema: %w", err)
	}
	return string(canon), nil
}

// inputQuestions are the questions pause asks for call c waiting on an
// MCP server's input requests: one per elicitation, and one per sampling
// request not answered yet under mcp.sampling Ask, in id order, each bound
// to the call's payload and the request it answers.
func inputQuestions(c *exagentv1.ToolCall, env *Env, revision int64, now time.Time) []exagentv1.Approval {
	reqs, err := parseInputRequests([]byte(c.Input.Requests))
	if err != nil {
		return nil // recorded only once checked: not reached
	}
	var out []exagentv1.Approval
	samples := samplesOf(c)
	for k, id := range slices.Sorted(maps.Keys(reqs)) {
		var q *exagentv1.Question
		var err error
		if reqs[id].Method == samplingMethod {
			if env.samplingPolicy(c.Tool) != exagentv1.SamplingAsk || samples[id] != nil {
				continue // the run's model answers it (mcpsample.go)
			}
			var s sampling
			if s, err = checkSampling(id, reqs[id]); err == nil {
				s.maxTokens = env.samplingTokens(s.maxTokens)
				q = samplingQuestion(id, c.Tool, s)
			}
		} else {
			q, err = questionOfInput(id, reqs[id])
		}
		if err != nil {
			continue
		}
		reqJSON, _ := json.Marshal(reqs[id])
		out = append(out, exagentv1.Approval{
			ID:          questionID(c.ID, revision, k),
			Kind:        exagentv1.KindQuestion,
			CallID:      c.ID,
			Question:    q,
			PayloadHash: canonical.Hash([]byte(c.PayloadHash + "\x00" + id + "\x00" + string(reqJSON))),
			Revision:    revision,
			State:       exagentv1.ApprovalPending,
			Rule:        c.Rule,
			RequestedAt: secTime(now),
		})
	}
	return out
}

func questionID(callID string, revision int64, k int) string {
	id := fmt.Sprintf("%s-r%d-i%d", callID, revision, k)
	if len(id) <= maxID {
		return id
	}
	return fmt.Sprintf("%s-r%d-i%d", canonical.Hash([]byte(callID))[len("sha256:"):len("sha256:")+16], revision, k)
}

// awaitsInput reports whether pending call c waits for answers to its
// server's input requests (not for an approval).
func awaitsInput(c *exagentv1.ToolCall) bool {
	return c.State == exagentv1.CallPending && c.Input != nil && c.Input.Responses == ""
}

// isMCPQuestion reports whether a asks a person on behalf of an MCP server.
func isMCPQuestion(a *exagentv1.Approval) bool {
	return a.IsQuestion() && a.Question.Source != exagentv1.QuestionAskHuman && a.Question.Source != exagentv1.QuestionParticipant
}

// answerInput applies an answer (a person's, or the run's model's to a
// sampling request) to one of call c's input requests: once none of the
// call's questions is pending any more and every sampling request has its
// answer, the responses are built from the latest answer to each request
// and the call is Approved to be retried with them. A sampling request a
// person declined fails the call: MCP has no declined completion.
func answerInput(st *Status, c *exagentv1.ToolCall) {
	latest := latestInputAnswers(st, c)
	if latest == nil {
		return // more to answer
	}
	reqs, err := parseInputRequests([]byte(c.Input.Requests))
	if err != nil {
		return
	}
	samples := samplesOf(c)
	responses := map[string]any{}
	for id, req := range reqs {
		if req.Method == samplingMethod {
			if a := latest[id]; a != nil && a.State == exagentv1.ApprovalAnswered && a.Question.Action != exagentv1.AnswerAccept {
				c.State = exagentv1.CallFailed
				c.Outcome = &exagentv1.CallOutcome{Result: bound(fmt.Sprintf(
					"%s: %s declined the MCP server's request for a completion of the run's model (sampling request %s); the call was not completed",
					exagentv1.ReasonMCPInputRefused, actorString(a.Actor), id), maxContent)}
				return
			}
			if samples[id] == nil {
				return // the run's model has not answered it yet (mcpsample.go)
			}
			responses[id] = samples[id]
			continue
		}
		a := latest[id]
		if a == nil || a.State != exagentv1.ApprovalAnswered {
			return // expired or cancelled: the call does not go on with a gap
		}
		resp := map[string]any{"action": strings.ToLower(string(answerAction(a.Question.Action)))}
		if a.Question.Action == exagentv1.AnswerAccept && a.Question.Source == exagentv1.QuestionMCPElicitation {
			resp["content"] = json.RawMessage(a.Question.Answer)
		}
		responses[id] = resp
	}
	canon, err := canonical.JSON(responses)
	if err != nil {
		return
	}
	c.Input.Responses = string(canon)
	c.State = exagentv1.CallApproved
}

// refuseDeniedSampling re-checks the step's calls whose MCP server asked
// for sampling against the current Agent (its env): a sampling request is
// journaled while the tool's mcp.sampling allowed it, then served later —
// sent to the run's model, or its journaled answer sent back to the server
// with the call's retry — possibly after a restart or an edit of the
// Agent. Once the tool says Deny, neither happens: the call fails as it
// would have had Deny been set when the server asked (MCPInputRefused, the
// model is told why), and the server, stateless between rounds, is not
// called again — in MCP 2026-07-28 a client refuses an input request by
// not answering it. It runs before any sampling is sent
// (driveSampling) and so before a call with sampling answers is retried.
// Touches: calls[].state and outcome. Guards: only calls waiting on their
// server's input (Pending with requests) or approved to be retried with
// the responses, never one whose intent is committed.
func refuseDeniedSampling(st *Status, env *Env) {
	for _, i := range stepCalls(st) {
		c := &st.Calls[i]
		retried := c.Input != nil && c.State == exagentv1.CallApproved && c.Input.Responses != ""
		if c.Input == nil || (!awaitsInput(c) && !retried) {
			continue
		}
		if env.samplingPolicy(c.Tool) != exagentv1.SamplingDeny {
			continue
		}
		reqs, err := parseInputRequests([]byte(c.Input.Requests))
		if err != nil {
			continue // recorded only once checked: not reached
		}
		for _, id := range slices.Sorted(maps.Keys(reqs)) {
			if reqs[id].Method != samplingMethod {
				continue
			}
			answered := "not sent to the run's model"
			if samplesOf(c)[id] != nil {
				answered = "the run's model's journaled answer was not sent back"
			}
			c.State = exagentv1.CallFailed
			c.Outcome = &exagentv1.CallOutcome{Result: bound(fmt.Sprintf(
				"%s: the MCP server asked the run's model for a completion (sampling request %s) while tool %q allowed it, "+
					"and the Agent now sets mcp.sampling Deny on it: the request was refused (%s) and the call was not completed",
				exagentv1.ReasonMCPInputRefused, id, c.Tool, answered), maxContent)}
			break
		}
	}
}

// maxInputRounds is the tool's mcp.maxInputRounds, else the default.
func (e *Env) maxInputRounds(tool string) int32 {
	if t := e.tool(tool); t != nil && t.MCP != nil && t.MCP.MaxInputRounds != nil {
		return *t.MCP.MaxInputRounds
	}
	return defaultMaxInputRounds
}
