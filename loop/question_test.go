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
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

const clusterSchema = `{"type":"object","properties":{"cluster":{"type":"string","enum":["eu","us"]},"ticket":{"type":"integer"}},"required":["cluster"]}`

// askEnv: ask_human asks (answers matching schema, "" = free text or the
// model's choices), pay asks for approval.
func askEnv(t testing.TB, schema string, edit func(*exagentv1.PolicySpec)) *Env {
	a := MakeAgent().AskTool("ask_human", schema).HTTPTool("pay", false)
	if edit != nil {
		p := a.Spec().Policy
		edit(&p)
		a.Policy(p)
	}
	return mustEnv(t, a.Spec(), MakeRun().Spec())
}

// askedOn pauses a run of env on one question with args.
func askedOn(t testing.TB, env *Env, args string) *harness {
	t.Helper()
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("q1", "ask_human", args)))
	h.step()
	if h.s.Phase != exagentv1.PhaseAwaitingApproval {
		t.Fatalf("phase %s, want AwaitingApproval: %s", h.s.Phase, h.s.Message)
	}
	return h
}

func answerCmd(t testing.TB, s Status, op, who, answer string, action exagentv1.AnswerAction) DecisionCmd {
	t.Helper()
	d := approveCmd(t, s, "q1", op, who)
	d.Decision, d.Answer, d.Action = exagentv1.DecisionAnswer, answer, action
	return d
}

// TestAskHumanAnswer: a question pauses the run with its text, choices and
// schema journaled; an answer that does not match is refused with the
// finding, an Approve of a question is refused, a valid answer closes the
// call with the answer as its result and the model sees it; the same
// operation again replays its receipt, another answer under it conflicts.
func TestAskHumanAnswer(t *testing.T) {
	env := askEnv(t, clusterSchema, nil)
	h := askedOn(t, env, `{"question":"Which cluster?","choices":["eu","us"]}`)
	a := h.s.Approvals[0]
	if !a.IsQuestion() || a.Question.Text != "Which cluster?" || a.Question.Schema == "" || len(a.Question.Choices) != 2 {
		t.Fatalf("request %+v %+v, want a question with its text, choices and schema", a, a.Question)
	}
	if !strings.Contains(h.s.Message, "waiting for 1 answer(s)") {
		t.Errorf("message %q does not say it waits for an answer", h.s.Message)
	}
	asked := h.s
	refusals := []struct {
		name, answer string
		action       exagentv1.AnswerAction
		want         string
	}{
		{"schema", `{"cluster":"mars"}`, "", "at /cluster: value must be one of"},
		{"required", `{"ticket":1}`, "", "missing property 'cluster'"},
		{"no answer", ``, exagentv1.AnswerAccept, "needs the answer"},
		{"decline with an answer", `{"cluster":"eu"}`, exagentv1.AnswerDecline, "carries no answer"},
		{"not JSON", `{"cluster":`, "", "not JSON"},
		{"unknown action", `{"cluster":"eu"}`, "Shrug", "is not Accept, Decline or Cancel"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			d := answerCmd(t, asked, "op-"+tc.name, "alice", tc.answer, tc.action)
			_, _, err := Answer(asked, env, d, t0)
			if !IsKind(err, KindConflict) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("answer %s: %v, want a conflict saying %q", tc.answer, err, tc.want)
			}
			if err := CheckAnswer(asked, d); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("admission's check of %s: %v, want %q", tc.answer, err, tc.want)
			}
		})
	}
	if _, _, err := Approve(asked, env, approveCmd(t, asked, "q1", "op-yes", "alice"), t0); !IsKind(err, KindConflict) ||
		!strings.Contains(err.Error(), "is a question") {
		t.Fatalf("approve of a question: %v, want a conflict", err)
	}

	r := h.decide(answerCmd(t, asked, "op-answer", "alice", `{ "ticket": 7, "cluster": "eu" }`, ""))
	c := h.s.Calls[0]
	if c.State != exagentv1.CallSucceeded || c.Outcome == nil || c.Outcome.Result != `{"cluster":"eu","ticket":7}` {
		t.Fatalf("call %s %+v, want Succeeded with the canonical answer", c.State, c.Outcome)
	}
	if q := h.s.Approvals[0]; q.State != exagentv1.ApprovalAnswered || q.Question.Action != exagentv1.AnswerAccept || q.Actor.Username != "alice" {
		t.Fatalf("question after the answer: %+v", q)
	}
	if r.AnswerHash == "" || h.s.Phase != exagentv1.PhaseApproved {
		t.Fatalf("receipt %+v, phase %s: want an answer hash and the run Approved", r, h.s.Phase)
	}
	if _, again, err := Answer(h.s, env, answerCmd(t, asked, "op-answer", "alice", `{"cluster":"eu","ticket":7}`, ""), t0); err != nil || again.AnswerHash != r.AnswerHash {
		t.Errorf("replay: %+v %v, want the stored receipt", again, err)
	}
	if _, _, err := Answer(h.s, env, answerCmd(t, asked, "op-answer", "alice", `{"cluster":"us"}`, ""), t0); !IsKind(err, KindConflict) ||
		!strings.Contains(err.Error(), "answer") {
		t.Errorf("same operation, other answer: %v, want a conflict naming the answer", err)
	}
	if _, _, err := Answer(h.s, env, answerCmd(t, asked, "op-second", "bob", `{"cluster":"us"}`, ""), t0); err == nil {
		t.Error("a second answer to an answered question was applied")
	}

	h.claim("worker-2")
	if act := h.step(); act.Kind != ActCallModel {
		t.Fatalf("after the answer: %s, want the model asked with the answer", describe(act))
	}
	last := h.s.History[len(h.s.History)-1]
	if last.Role != exagentv1.RoleTool || last.ToolCallID != "q1" || last.Content != `{"cluster":"eu","ticket":7}` {
		t.Fatalf("the model sees %+v, want the answer as the tool's result", last)
	}
}

// TestAskHumanDefaults: without a schema, the answer is free text, or one
// of the model's choices when it offers some; decline and cancel tell the
// model nobody answered, and the run goes on.
func TestAskHumanDefaults(t *testing.T) {
	env := askEnv(t, "", nil)
	cases := []struct {
		name, args, answer string
		action             exagentv1.AnswerAction
		refused            string
		state              exagentv1.CallState
		result             string
	}{
		{"free text", `{"question":"Ticket?"}`, `"INC-42"`, "", "", exagentv1.CallSucceeded, `"INC-42"`},
		{"free text not a string", `{"question":"Ticket?"}`, `42`, "", "want string", "", ""},
		{"a choice", `{"question":"Where?","choices":["eu","us"]}`, `"us"`, "", "", exagentv1.CallSucceeded, `"us"`},
		{"not a choice", `{"question":"Where?","choices":["eu","us"]}`, `"mars"`, "", "value must be one of", "", ""},
		{"decline", `{"question":"Where?"}`, ``, exagentv1.AnswerDecline, "", exagentv1.CallDenied, "alice declined to answer: not mine. No answer was given."},
		{"cancel", `{"question":"Where?"}`, ``, exagentv1.AnswerCancel, "", exagentv1.CallDenied, "alice dismissed the question without answering: not mine. No answer was given."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := askedOn(t, env, tc.args)
			d := answerCmd(t, h.s, "op", "alice", tc.answer, tc.action)
			d.Reason = "not mine"
			st, _, err := Answer(h.s, env, d, t0)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("answer %s: %v, want refused with %q", tc.answer, err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c := st.Calls[0]; c.State != tc.state || c.Outcome.Result != tc.result || st.Phase != exagentv1.PhaseApproved {
				t.Fatalf("call %s %q, run %s; want %s %q and the run going on", c.State, c.Outcome.Result, st.Phase, tc.state, tc.result)
			}
		})
	}
}

// TestAskHumanPolicy: a policy may forbid asking; Allow still asks (the
// question is its own gate); a question and an approval in one batch
// wait together, each decided by its own kind of decision.
func TestAskHumanPolicy(t *testing.T) {
	deny := askEnv(t, "", func(p *exagentv1.PolicySpec) {
		p.Rules = append(p.Rules, exagentv1.PolicyRule{Name: "no-asking", Action: exagentv1.PolicyDeny, Tools: []string{"ask_human"}})
	})
	h := newHarness(t, deny).claim(w1)
	h.step()
	h.respond(tools(call("q1", "ask_human", `{"question":"?"}`)))
	if act := h.step(); act.Kind != ActCallModel || h.s.Calls[0].State != exagentv1.CallRefused {
		t.Fatalf("denied question: %s, call %s", describe(act), h.s.Calls[0].State)
	}

	allow := askEnv(t, "", func(p *exagentv1.PolicySpec) { p.Default = exagentv1.PolicyAllow })
	h = askedOn(t, allow, `{"question":"Really?"}`)
	if !h.s.Approvals[0].IsQuestion() {
		t.Fatal("policy Allow let a question through without asking")
	}

	both := askEnv(t, "", nil)
	h = newHarness(t, both).claim(w1)
	h.step()
	h.respond(tools(call("q1", "ask_human", `{"question":"Amount?"}`), call("p1", "pay", `{"amount":1}`)))
	h.step()
	if !strings.Contains(h.s.Message, "1 approval(s) and 1 answer(s)") || h.s.PendingApprovals != 2 {
		t.Fatalf("mixed batch: %q, %d pending", h.s.Message, h.s.PendingApprovals)
	}
	ans := answerCmd(t, h.s, "op-a", "alice", `"10"`, "")
	app := approveCmd(t, h.s, "p1", "op-p", "alice")
	h.decide(ans)
	if h.s.Phase != exagentv1.PhaseAwaitingApproval {
		t.Fatalf("after the answer alone the run is %s", h.s.Phase)
	}
	bad := app
	bad.Decision = exagentv1.DecisionAnswer
	bad.Answer = `"x"`
	if _, _, err := Answer(h.s, both, bad, t0); err == nil || !strings.Contains(err.Error(), "yes or no") {
		t.Fatalf("an answer to an approval: %v", err)
	}
	h.decide(app)
	if h.s.Phase != exagentv1.PhaseApproved {
		t.Fatalf("after both: %s", h.s.Phase)
	}
}

// TestAskHumanExpiry: a question nobody answers meets onExpire like an
// approval: Continue tells the model nobody answered in time; a late
// answer is refused.
func TestAskHumanExpiry(t *testing.T) {
	env := askEnv(t, "", func(p *exagentv1.PolicySpec) { p.OnExpire = exagentv1.OnExpireContinue })
	h := askedOn(t, env, `{"question":"Anyone?"}`)
	asked := h.s
	exp := asked.Approvals[0].ExpiresAt.Time
	st, changed, err := Expire(asked, env, exp)
	if err != nil || !changed {
		t.Fatalf("expire: %v %v", changed, err)
	}
	if c := st.Calls[0]; c.State != exagentv1.CallRefused || !strings.Contains(c.Outcome.Result, "Nobody answered the question in time") {
		t.Fatalf("expired question: %s %q", c.State, c.Outcome.Result)
	}
	if _, _, err := Answer(asked, env, answerCmd(t, asked, "late", "alice", `"yes"`, ""), exp.Add(time.Second)); !IsKind(err, KindExpired) {
		t.Fatalf("late answer: %v, want expired", err)
	}
}
