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
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
)

// runView is the run page: where the run is, what it waits for, what it
// did, and one page of its transcript.
type runView struct {
	base
	// RunUID and Revision are the run as rendered: a Resolve form
	// carries them (Seen), with its call's payload hash.
	RunUID                 string
	Revision               int64
	Namespace, Name, Agent string
	Phase, Reason, Message string
	Requester              string
	Step                   int32
	Conditions             []metav1.Condition
	// Pending are the approvals waiting (each with its decide form);
	// Uncertain the calls a person resolves.
	Pending   []inboxRow
	Uncertain []callView
	// Waits are the calls that wait on the world (a timer, an object, a
	// callback): nobody has to act, the run resumes on its own.
	Waits    []waitView
	Calls    []callView
	Decided  []approvalView
	Receipts []receiptView
	// Conversation names the conversation a turn belongs to, Turn its
	// place in it (0 before it started): the page links to the thread.
	Conversation string
	Turn         int32
	// Parent and Root place a delegated run in its tree; Children are the
	// runs it delegated to.
	Parent, Root string
	Children     []childView
	Output       string
	Transcript   transcriptView
	// TranscriptError says why the page of the transcript asked for
	// cannot be shown (the rest of the page still is).
	TranscriptError string
	Flash           *flash
	// Form keeps what the person typed when a decision was refused.
	Form formState
}

type flash struct {
	Kind string // "ok" or "error"
	Text string
}

type formState struct {
	// Run is the run the form decided on (a thread holds several).
	Run                              string
	Approval, Call, Reason, Evidence string
	// Answer, As and Choice are a question's form.
	Answer, As, Choice string
}

type callView struct {
	ID, Tool, State, Args, Rule string
	// PayloadHash is the call's, which a Resolve binds.
	PayloadHash           string
	Step                  int32
	HasOutcome, Succeeded bool
	Result, ResolvedBy    string
	Evidence, Editor      string
}

// waitView is a waiting call: what it waits for, since and until when.
type waitView struct {
	ID, Tool, Kind, For, Since, Until string
}

type approvalView struct {
	ID, CallID, State, Decision, Actor, Reason string
	Votes                                      []string
}

type receiptView struct {
	OperationID, DecisionName, Decision, Target, Actor, Outcome string
	AppliedAt                                                   string
}

type childView struct {
	Name, Agent, Phase, Message string
	Pending                     int32
	// Depth is 1 for a child of the page's run, 2 for a grandchild, …
	Depth int
}

// runPage renders the run the path names.
func (s *Server) runPage(q *request) {
	s.renderRun(q, http.StatusOK, nil, formState{})
}

// renderRun reads the run and renders it, with f (a decision's result)
// on top and form (what was typed) kept in the forms.
func (s *Server) renderRun(q *request, code int, f *flash, form formState) {
	ctx := q.r.Context()
	key := types.NamespacedName{Namespace: q.r.PathValue("namespace"), Name: q.r.PathValue("name")}
	run := &exagentv1.AgentRun{}
	if err := q.c.Get(ctx, key, run); err != nil {
		if f != nil {
			// The refusal must not be lost behind a failed read.
			s.pages.render(q.w, code, "problem", problemPage{base: s.base(q, "Problem"),
				Message: f.Text + " (The run could not be read again: " + s.cfg.explain(err) + ")"})
			return
		}
		s.problem(q, err)
		return
	}
	v := runView{base: s.base(q, run.Name), RunUID: string(run.UID), Revision: run.Status.Revision,
		Namespace: run.Namespace, Name: run.Name, Agent: run.Spec.AgentRef.Name,
		Phase: string(run.Status.Phase), Reason: run.Status.Reason, Message: run.Status.Message,
		Step: run.Status.Cursor.Step, Conditions: run.Status.Conditions, Flash: f, Form: form}
	if rb := run.Spec.RequestedBy; rb != nil {
		v.Requester = rb.Username
	}
	if d := run.Spec.Delegation; d != nil {
		v.Parent, v.Root = d.Parent.Name, d.Root.Name
	}
	if ref := run.Spec.ConversationRef; ref != nil {
		v.Conversation = ref.Name
		if run.Status.Turn != nil {
			v.Turn = run.Status.Turn.Index
		}
	}
	if f == nil {
		v.Flash = s.decidedFlash(q, run)
	}
	agent := &exagentv1.Agent{}
	if err := q.c.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
		agent = nil
	}
	values := resolveValues(ctx, q.c, run, nil, nil)
	v.Pending = wholeRows(run, rowsOf(run, agent), values)
	for i := range run.Status.Calls {
		c := callOf(&run.Status.Calls[i], values)
		v.Calls = append(v.Calls, c)
		if run.Status.Calls[i].State == exagentv1.CallUncertain {
			v.Uncertain = append(v.Uncertain, c)
		}
		if w := run.Status.Calls[i].Wait; w != nil && run.Status.Calls[i].State == exagentv1.CallStarted {
			v.Waits = append(v.Waits, waitView{ID: c.ID, Tool: c.Tool, Kind: string(w.Kind), For: waitFor(w),
				Since: w.Since.UTC().Format(time.RFC3339), Until: w.Until.UTC().Format(time.RFC3339)})
		}
	}
	for _, a := range run.Status.Approvals {
		if a.State == exagentv1.ApprovalPending {
			continue
		}
		av := approvalView{ID: a.ID, CallID: a.CallID, State: string(a.State), Decision: a.Decision, Reason: a.Reason}
		if a.Actor != nil {
			av.Actor = a.Actor.Username
		}
		for _, vote := range a.Votes {
			av.Votes = append(av.Votes, vote.Actor.Username)
		}
		v.Decided = append(v.Decided, av)
	}
	for _, r := range run.Status.Receipts {
		v.Receipts = append(v.Receipts, receiptOf(r))
	}
	if v.Children = descendants(ctx, q.c, run); v.Children == nil { // tree.go
		for _, ch := range run.Status.Children {
			v.Children = append(v.Children, childView{Name: ch.Name, Agent: ch.Agent, Phase: string(ch.Phase), Message: ch.Message,
				Pending: ch.PendingApprovals, Depth: 1})
		}
	}
	v.Output = value(run.Status.Output, run.Status.OutputRef, values)
	t, err := transcriptPage(ctx, q.c, run, q.r.URL.Query())
	if err != nil {
		v.TranscriptError = s.cfg.explain(err)
	}
	v.Transcript = t
	s.pages.render(q.w, code, "run", v)
}

func callOf(c *exagentv1.ToolCall, values segment.Values) callView {
	v := callView{ID: c.ID, Tool: c.Tool, State: string(c.State), Step: c.Step, Rule: c.Rule, PayloadHash: c.PayloadHash,
		Args: shownJSON(value(c.Args, c.ArgsRef, values), maxShownValue)}
	if c.Edit != nil {
		v.Editor = c.Edit.Editor.Username
	}
	if o := c.Outcome; o != nil {
		v.HasOutcome, v.Succeeded = true, o.Succeeded
		v.Result = value(o.Result, o.ResultRef, values)
		v.ResolvedBy, v.Evidence = o.ResolvedBy, o.Evidence
	}
	return v
}

// wholeRows gives the run page's pending rows their call whole — the
// arguments, sealed ones read from their segment, or the edited version
// a vote is on — where the inbox shows the first KiBs: a person decides
// on all of it. The page's stylesheet makes a long one scroll.
func wholeRows(run *exagentv1.AgentRun, rows []inboxRow, values segment.Values) []inboxRow {
	for i := range rows {
		a := run.Status.Approval(rows[i].ApprovalID)
		c := run.Status.Call(rows[i].CallID)
		switch {
		case a != nil && a.Edit != nil && a.Edit.Args != "":
			rows[i].Args = indentedJSON(a.Edit.Args)
		case c != nil && c.Args == "" && c.ArgsRef != nil:
			s, err := values.Resolve(c.ArgsRef)
			if err != nil {
				rows[i].Args = fmt.Sprintf("(sealed arguments of %d bytes in segment %s, not shown: %v)", c.ArgsRef.Bytes, c.ArgsRef.Segment, err)
				continue
			}
			rows[i].Args = indentedJSON(s)
		case c != nil:
			rows[i].Args = indentedJSON(c.Args)
		}
	}
	return rows
}

func receiptOf(r exagentv1.Receipt) receiptView {
	v := receiptView{OperationID: r.OperationID, DecisionName: r.DecisionName, Decision: r.Decision, Target: r.Target, Outcome: string(r.Outcome)}
	if r.Actor != nil {
		v.Actor = r.Actor.Username
	}
	if r.AppliedAt != nil {
		v.AppliedAt = r.AppliedAt.UTC().Format(time.RFC3339)
	}
	return v
}

// decidedFlash is the result of the decision ?decided= names (the page a
// decision redirects to): read back from the store, so what it says is
// what the operator recorded.
func (s *Server) decidedFlash(q *request, run *exagentv1.AgentRun) *flash {
	name := q.r.URL.Query().Get("decided")
	if name == "" {
		return nil
	}
	d := &exagentv1.ApprovalDecision{}
	if err := q.c.Get(q.r.Context(), client.ObjectKey{Namespace: run.Namespace, Name: name}, d); err != nil || d.Spec.RunRef.Name != run.Name {
		return nil
	}
	return decisionFlash(d)
}

// waitFor says what a wait waits for beyond its time ("" for a timer).
func waitFor(w *exagentv1.CallWait) string {
	if w.Kind == exagentv1.WaitTimer {
		return ""
	}
	return w.Target()
}
