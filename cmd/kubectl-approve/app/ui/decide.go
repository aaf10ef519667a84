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

package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// maxText bounds a reason or evidence, as the ApprovalDecision's schema
// does (MaxLength 4096).
const maxText = 4096

// decide creates the decision the form asks for, as the person, and
// redirects to the run page, which reads the decision back; a refusal —
// the plugin's check, RBAC, admission or the operator — renders the run
// page as it is now with the refusal on top and the form as typed. A
// card on a conversation's thread says so (field conversation): the
// person goes back to the thread instead, the same way.
func (s *Server) decide(q *request) {
	f := q.r.PostForm
	form := formState{Run: q.r.PathValue("name"), Approval: f.Get("approval"), Call: f.Get("call"),
		Reason: strings.TrimSpace(f.Get("reason")), Evidence: strings.TrimSpace(f.Get("evidence"))}
	back, err := backTo(f.Get("conversation"))
	if err != nil {
		refuse(q.w, http.StatusBadRequest, "Refused: "+err.Error())
		return
	}
	render := func(code int, fl *flash) {
		if back != "" {
			s.renderThread(q, code, q.r.PathValue("namespace"), back, fl, form, replyState{})
			return
		}
		s.renderRun(q, code, fl, form)
	}
	req := DecideRequest{Namespace: q.r.PathValue("namespace"), Run: q.r.PathValue("name"),
		Kind: exagentv1.DecisionKind(f.Get("decision")), ApprovalID: form.Approval, CallID: form.Call,
		Outcome: exagentv1.ResolveOutcome(f.Get("outcome")), Evidence: form.Evidence, Reason: form.Reason}
	seen, ok := seenOf(f)
	if !ok {
		// A form without what it showed (an old page, a hand-made POST)
		// cannot bind the person to a call: nothing is sent.
		render(http.StatusConflict, &flash{Kind: "error", Text: staleText})
		return
	}
	req.Seen = seen
	msg := ""
	if req.Kind == exagentv1.DecisionAnswer {
		form.Answer, form.As, form.Choice = f.Get("answer"), f.Get("as"), f.Get("choice")
		req.Action, req.Answer, msg = answerOf(exagentv1.AnswerAction(f.Get("action")), form)
	}
	if msg == "" {
		msg = checkRequest(req)
	}
	if msg != "" {
		render(http.StatusUnprocessableEntity, &flash{Kind: "error", Text: msg})
		return
	}
	ctx, cancel := context.WithTimeout(q.r.Context(), s.cfg.DecisionTimeout)
	defer cancel()
	d, err := s.cfg.Decide(ctx, q.c, req)
	if errors.Is(err, ErrCallChanged) {
		s.cfg.Log.Info("decision refused: the call changed since the page was rendered", "run", req.Namespace+"/"+req.Run,
			"decision", req.Kind, "error", err.Error())
		render(http.StatusConflict, &flash{Kind: "error", Text: err.Error()})
		return
	}
	if err != nil {
		s.cfg.Log.Info("decision refused", "run", req.Namespace+"/"+req.Run, "decision", req.Kind, "error", err.Error())
		code := http.StatusConflict
		if apierrors.IsForbidden(err) || strings.Contains(err.Error(), "not allowed") {
			code = http.StatusForbidden
		}
		render(code, &flash{Kind: "error", Text: "Refused: " + s.cfg.explain(err)})
		return
	}
	if back != "" {
		http.Redirect(q.w, q.r, threadURL(req.Namespace, back, req.Run, url.Values{"decided": {d.Name}}), http.StatusSeeOther)
		return
	}
	to := url.URL{Path: "/runs/" + req.Namespace + "/" + req.Run, RawQuery: url.Values{"decided": {d.Name}}.Encode()}
	http.Redirect(q.w, q.r, to.String(), http.StatusSeeOther)
}

// backTo is the conversation a thread's card returns to: a name, never a
// URL — the redirect is built from it, so it must be an object name.
func backTo(conversation string) (string, error) {
	if conversation == "" {
		return "", nil
	}
	if errs := validation.IsDNS1123Subdomain(conversation); len(errs) > 0 {
		return "", fmt.Errorf("the form's conversation %q is not a conversation's name: %s", conversation, strings.Join(errs, "; "))
	}
	return conversation, nil
}

// staleText is what a refused stale form says (ErrCallChanged).
var staleText = ErrCallChanged.Error()

// seenOf reads what the form says the page showed: the run's UID, the
// revision and the payload hash. Every decision form carries all three;
// a form without them is refused.
func seenOf(f url.Values) (Seen, bool) {
	rev, err := strconv.ParseInt(f.Get("revision"), 10, 64)
	seen := Seen{RunUID: f.Get("runUID"), Revision: rev, PayloadHash: f.Get("payloadHash")}
	return seen, err == nil && rev >= 0 && seen.RunUID != "" && seen.PayloadHash != ""
}

// checkRequest is what the page refuses before anything is sent.
func checkRequest(r DecideRequest) string {
	switch r.Kind {
	case exagentv1.DecisionApprove, exagentv1.DecisionDeny:
		if r.ApprovalID == "" {
			return "Name the approval to decide."
		}
		if r.Reason == "" {
			return "A reason is required: say why you " + strings.ToLower(string(r.Kind)) + " this call (it is recorded with your name)."
		}
	case exagentv1.DecisionAnswer:
		if r.ApprovalID == "" {
			return "Name the question to answer."
		}
	case exagentv1.DecisionResolve:
		if r.CallID == "" {
			return "Name the call to resolve."
		}
		switch r.Outcome {
		case exagentv1.ResolveSucceeded, exagentv1.ResolveFailed, exagentv1.ResolveRetry:
		default:
			return "Choose what really happened: Succeeded, Failed, or Retry."
		}
		if r.Evidence == "" {
			return "Evidence is required: say what you checked to know the outcome (a ticket, a log line, …)."
		}
	default:
		return fmt.Sprintf("Unknown decision %q: the page decides Approve, Deny, Answer or Resolve.", r.Kind)
	}
	if len(r.Reason) > maxText || len(r.Evidence) > maxText {
		return fmt.Sprintf("The reason and the evidence are at most %d bytes each.", maxText)
	}
	return ""
}

// decisionFlash says what became of d, from its status.
func decisionFlash(d *exagentv1.ApprovalDecision) *flash {
	actor := "?"
	if d.Spec.Actor != nil {
		actor = d.Spec.Actor.Username
	}
	what := strings.ToLower(string(d.Spec.Decision))
	target := "approval " + d.Spec.ApprovalID
	switch d.Spec.Decision {
	case exagentv1.DecisionResolve:
		target = "call " + d.Spec.CallID + " (" + string(d.Spec.Outcome) + ")"
	case exagentv1.DecisionAnswer:
		target = "question " + d.Spec.ApprovalID
		if d.Spec.Action != "" && d.Spec.Action != exagentv1.AnswerAccept {
			what = strings.ToLower(string(d.Spec.Action))
		}
	}
	switch d.Status.Phase {
	case exagentv1.DecisionRejected:
		return &flash{Kind: "error", Text: fmt.Sprintf("Your %s of %s was rejected: %s (approvaldecision %s)", what, target, d.Status.Message, d.Name)}
	case exagentv1.DecisionApplied:
		text := fmt.Sprintf("Applied: %s of %s by %s (approvaldecision %s", what, target, actor, d.Name)
		if r := d.Status.Receipt; r != nil {
			text += ", receipt " + r.OperationID
		}
		return &flash{Kind: "ok", Text: text + ")."}
	}
	return &flash{Kind: "ok", Text: fmt.Sprintf("Sent: %s of %s by %s (approvaldecision %s); the operator has not applied it yet.", what, target, actor, d.Name)}
}

// answerOf builds an Answer's action and answer from the form: a chosen
// choice is a JSON string; the answer field is a JSON string ("as" text)
// or a JSON document ("as" json). Decline and Cancel carry none. The
// question's schema is admission's to check.
func answerOf(action exagentv1.AnswerAction, f formState) (exagentv1.AnswerAction, []byte, string) {
	switch action {
	case exagentv1.AnswerDecline, exagentv1.AnswerCancel:
		return action, nil, ""
	case exagentv1.AnswerAccept:
	default:
		return "", nil, fmt.Sprintf("Unknown answer action %q: Accept, Decline or Cancel.", action)
	}
	var b []byte
	switch {
	case f.Choice != "":
		b, _ = json.Marshal(f.Choice)
	case strings.TrimSpace(f.Answer) == "":
		return "", nil, "Give an answer (or pick one of the choices), or decline."
	case f.As == "json":
		if !json.Valid([]byte(f.Answer)) {
			return "", nil, "The answer is not valid JSON; choose \"as text\" to send it as a string."
		}
		b = []byte(strings.TrimSpace(f.Answer))
	default:
		b, _ = json.Marshal(f.Answer)
	}
	if len(b) > exagentv1.MaxValueBytes {
		return "", nil, fmt.Sprintf("The answer takes %d bytes, more than %d.", len(b), exagentv1.MaxValueBytes)
	}
	return exagentv1.AnswerAccept, b, ""
}
