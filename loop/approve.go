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
	"github.com/exagent-io/exagent/internal/canonical"
)

// Approve records a human's approval of one pending call. It executes
// nothing: when the last pending approval is decided the run becomes
// Approved, and a worker's Claim and Step run the approved calls after
// re-checking them against the current policy and schema.
//
// Beyond one yes (docs/architecture.md §13):
//   - an Approve with arguments edits the call: the edited arguments are
//     validated against the tool's schema, the policy is evaluated on them
//     again (a Deny refuses the edit; an Ask needs no second round unless
//     another quorum would ask), and the call runs with exactly them; the
//     call keeps the model's version (calls[].edit);
//   - under a quorum (approvals[].quorum) each distinct approver's Approve
//     is one vote, journaled with the version of the call it approves; the
//     approval is Approved once the votes on the version that will run
//     meet it; only the first vote may edit the call (quorum.go);
//   - scope Run (when the rule allows it, and under a quorum only when
//     every vote chose it) records a grant: later calls of the tool that
//     the same rule asks about run without asking (grants.go).
//
// Touches: the approval (state, decision, actor, reason, votes, edit,
// scope), its call (state Approved; args and edit when edited), history
// (the edited call as the model will see it), grants, receipts,
// pendingApprovals, and phase/reason/message.
// Guards: see Decide and findPendingApproval; the state fits the budget.
func Approve(s Status, env *Env, d DecisionCmd, now time.Time) (Status, exagentv1.Receipt, error) {
	dec, replay, err := prepare(&s, env, d, exagentv1.DecisionApprove, now)
	if replay != nil || err != nil {
		return s, receiptOf(replay), err
	}
	i, err := findPendingApproval(&s, env, dec.cmd, now)
	if err != nil {
		return s, exagentv1.Receipt{}, err
	}
	if err := notAnApproval(&s.Approvals[i]); err != nil {
		return s, exagentv1.Receipt{}, err
	}
	st := clone(s)
	a := &st.Approvals[i]
	c := &st.Calls[findCall(&st, a.CallID)]
	scope := dec.cmd.Scope
	if scope == exagentv1.ScopeRun {
		if err := env.checkSticky(&st, a, c); err != nil {
			return s, exagentv1.Receipt{}, err
		}
	}
	edit, err := env.editOf(a, c, dec.cmd)
	if err != nil {
		return s, exagentv1.Receipt{}, err
	}
	if a.Quorum != nil {
		met, err := vote(a, edit, dec, now)
		if err != nil {
			return s, exagentv1.Receipt{}, err
		}
		if !met {
			st.Message = bound(fmt.Sprintf("approval %s: %s voted; %s", a.ID, actorString(&dec.cmd.Actor), quorumMissing(a)), maxMessage)
			return commitDecision(s, st, env, dec)
		}
		scope = quorumScope(a)
	} else if edit != nil {
		a.Edit = edit
	}
	a = decideApproval(&st, i, dec, exagentv1.ApprovalApproved)
	c.State = exagentv1.CallApproved
	what := fmt.Sprintf("approval %s approved by %s", a.ID, approvers(a))
	if a.Edit != nil {
		applyEdit(&st, env, c, a)
		what += fmt.Sprintf(" (arguments edited by %s)", actorString(&a.Edit.Editor))
	}
	if scope == exagentv1.ScopeRun {
		a.Scope = exagentv1.ScopeRun
		env.grant(&st, a, c, dec)
		what += fmt.Sprintf(" for the rest of the run (tool %s)", c.Tool)
	}
	afterDecision(&st, what)
	return commitDecision(s, st, env, dec)
}

// editOf checks the edited arguments an Approve carries against the call's
// tool and the policy, and returns the version of the call they make; nil
// when the decision edits nothing (no arguments, or the very arguments
// the approval already stands for).
func (e *Env) editOf(a *exagentv1.Approval, c *exagentv1.ToolCall, d DecisionCmd) (*exagentv1.ApprovalEdit, error) {
	if d.Arguments == "" {
		return nil, nil
	}
	canon, hash, err := editedArgs(d.Arguments)
	if err != nil {
		return nil, err
	}
	switch {
	case a.Edit != nil && hash == a.Edit.ArgsHash:
		return a.Edit.DeepCopy(), nil
	case a.Edit == nil && hash == c.ArgsHash:
		return nil, nil // the model's own arguments: nothing is edited
	}
	if e.tool(c.Tool) == nil {
		return nil, conflictf("tool %q of call %s is not available to check edited arguments against now "+
			"(for an mcp tool: the manager has no current tools/list of its server); approve without --set, or try again", c.Tool, c.ID)
	}
	if !e.editable(a.Rule, c.Tool) {
		return nil, conflictf("%s: approve or deny the call as the model proposed it", e.notEditable(a.Rule, c.Tool))
	}
	if err := e.checkArgs(c.Tool, string(canon)); err != nil {
		return nil, errorf(KindConflict, exagentv1.ReasonInvalidArguments,
			"the edited arguments do not match the parameters schema of tool %q: %v", c.Tool, err)
	}
	ph, err := e.payloadHash(c.Tool, string(canon))
	if err != nil {
		return nil, conflictf("the edited arguments cannot be bound: %v", err)
	}
	action, rule := e.policy.EvaluateTool(c.Tool, e.toolAnnotations(c.Tool), json.RawMessage(canon))
	switch {
	case action == exagentv1.PolicyDeny:
		return nil, conflictf("the policy denies the edited call (rule %s): edit it so that the policy allows or asks about it, or deny the call", ruleName(rule))
	case action == exagentv1.PolicyAsk && !sameQuorum(e.quorumOf(rule), a.Quorum):
		return nil, conflictf("the edited call would be asked about by rule %s, whose quorum is not the one this approval has (rule %s): "+
			"edit it so that the same quorum applies, or deny the call", ruleName(rule), ruleName(a.Rule))
	}
	return &exagentv1.ApprovalEdit{Args: string(canon), ArgsHash: hash, PayloadHash: ph, Editor: d.Actor}, nil
}

// editedArgs canonicalizes a decision's arguments: a JSON object that fits
// where a call's arguments are stored.
func editedArgs(raw string) ([]byte, string, error) {
	canon, err := canonical.JSON(json.RawMessage(raw))
	if err != nil {
		return nil, "", errorf(KindConflict, exagentv1.ReasonInvalidArguments, "the edited arguments are not JSON: %v", err)
	}
	if len(canon) == 0 || canon[0] != '{' {
		return nil, "", errorf(KindConflict, exagentv1.ReasonInvalidArguments, "the edited arguments must be a JSON object")
	}
	if len(canon) > maxContent {
		return nil, "", errorf(KindConflict, exagentv1.ReasonInvalidArguments,
			"the edited arguments take %d bytes, more than %d", len(canon), maxContent)
	}
	return canon, canonical.Hash(canon), nil
}

// applyEdit makes the approved edited version the call: it runs with
// exactly those arguments, the call keeps the model's version, and the
// model's next request shows the call as it ran. A call that was already
// sent under another version (asked again after a Resolve Retry) gets the
// key of its new version (Env.callIdempotencyKey).
func applyEdit(st *Status, env *Env, c *exagentv1.ToolCall, a *exagentv1.Approval) {
	ed := a.Edit
	if c.Edit == nil {
		c.Edit = &exagentv1.CallEdit{ModelArgs: c.Args, ModelArgsRef: c.ArgsRef.DeepCopy(),
			ModelArgsHash: c.ArgsHash, ModelPayloadHash: a.PayloadHash}
	}
	c.Edit.Editor, c.Edit.ApprovalID = ed.Editor, a.ID
	c.Args, c.ArgsRef, c.ArgsHash, c.PayloadHash = ed.Args, nil, ed.ArgsHash, ed.PayloadHash
	ed.Args = "" // the call holds them now
	if c.IdempotencyKey != "" {
		c.IdempotencyKey = env.callIdempotencyKey(c)
	}
	for m := len(st.History) - 1; m >= 0; m-- {
		for k := range st.History[m].ToolCalls {
			if tc := &st.History[m].ToolCalls[k]; tc.ID == c.ID {
				tc.Arguments, tc.ArgumentsRef = c.Args, nil
				return
			}
		}
	}
}

// editNote opens the result of an edited call: the model proposed other
// arguments, and is told who changed them and what ran.
func editNote(c *exagentv1.ToolCall) string {
	if c.Edit == nil {
		return ""
	}
	return fmt.Sprintf("Note: before approving, %s edited the arguments of this call; it ran with %s.\n",
		actorString(&c.Edit.Editor), clipText(c.Args, editNoteArgs))
}

// editNoteArgs bounds the edited arguments an editNote repeats.
const editNoteArgs = 1024

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return truncateUTF8(s, n) + "…"
}

// editable says whether calls of tool that rule asks about may be edited:
// the rule's editable, else yes except for builtin tools.
func (e *Env) editable(rule, tool string) bool {
	if r := e.policy.rule(rule); r != nil && r.editable != nil {
		return *r.editable
	}
	t := e.tool(tool)
	return t == nil || t.Builtin == nil
}

func (e *Env) notEditable(rule, tool string) string {
	if r := e.policy.rule(rule); r != nil && r.editable != nil {
		return fmt.Sprintf("rule %s forbids editing the calls it asks about (editable: false)", rule)
	}
	return fmt.Sprintf("calls of builtin tool %q are not editable unless the rule that asks about them sets editable: true", tool)
}

// quorumOf is the quorum of the rule named rule (nil: one approval).
func (e *Env) quorumOf(rule string) *exagentv1.Quorum {
	if r := e.policy.rule(rule); r != nil && r.quorum != nil {
		return r.quorum.DeepCopy()
	}
	return nil
}

// onExpireOf is what an approval asked by rule does at its expiry: the
// rule's onExpire, else the policy's.
func (e *Env) onExpireOf(rule string) exagentv1.OnExpire {
	if r := e.policy.rule(rule); r != nil && r.onExpire != "" {
		return r.onExpire
	}
	return e.onExpire()
}

func sameQuorum(a, b *exagentv1.Quorum) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ja, _ := canonical.JSON(a)
	jb, _ := canonical.JSON(b)
	return string(ja) == string(jb)
}

func ruleName(rule string) string {
	if rule == "" {
		return "default"
	}
	return rule
}

// approvers names who approved a: its voters under a quorum, else its decider.
func approvers(a *exagentv1.Approval) string {
	if len(a.Votes) == 0 {
		return actorString(a.Actor)
	}
	names := make([]string, len(a.Votes))
	for i := range a.Votes {
		names[i] = actorString(&a.Votes[i].Actor)
	}
	return strings.Join(names, ", ")
}

// CheckApprove is what admission checks of an Approve beyond its target,
// with the engine's own rules: the voter has not voted on it already, the
// edited arguments (schema, policy, editable; every vote on one version)
// and scope Run (sticky). The approval must exist; a check that needs what
// only the manager has — an mcp tool's listing — is left to the
// controller, which runs every check again inside its compare-and-swap.
func CheckApprove(s Status, env *Env, d DecisionCmd) error {
	i := findApproval(&s, d.ApprovalID)
	if i < 0 {
		return nil
	}
	st := clone(s)
	a := &st.Approvals[i]
	if err := notAnApproval(a); err != nil {
		return err
	}
	c := findCall(&st, a.CallID)
	if c < 0 {
		return nil
	}
	call := &st.Calls[c]
	if a.Quorum != nil {
		if err := alreadyVoted(a, &d.Actor); err != nil {
			return err
		}
		if err := checkEditAfterVotes(a, call, d); err != nil {
			return err
		}
	}
	if env.tool(call.Tool) == nil {
		return nil // an mcp tool without a listing here: the controller checks
	}
	if d.Scope == exagentv1.ScopeRun {
		if err := env.checkSticky(&st, a, call); err != nil {
			return err
		}
	}
	edit, err := env.editOf(a, call, d)
	if err != nil || a.Quorum == nil {
		return err
	}
	return checkVoteVersion(a, edit)
}

// checkEditAfterVotes is the part of checkVoteVersion that needs no tool
// listing: arguments that differ from the version every vote so far is on.
func checkEditAfterVotes(a *exagentv1.Approval, c *exagentv1.ToolCall, d DecisionCmd) error {
	if d.Arguments == "" || len(a.Votes) == 0 {
		return nil
	}
	_, hash, err := editedArgs(d.Arguments)
	if err != nil {
		return err
	}
	switch {
	case a.Edit != nil && hash != a.Edit.ArgsHash:
		return editedBefore(a)
	case a.Edit == nil && hash != c.ArgsHash:
		return editAfterVotes(a)
	}
	return nil
}
