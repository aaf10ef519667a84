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

// Delegation (docs/architecture.md §5). A call of an agent tool goes through the
// journal like any other — policy, approval, intent — and its effect is
// the creation of a child AgentRun, made by the controller after the
// intent's commit (PlanChild says what to create). Creating the child
// again finds the same one, so a delegation call is never Uncertain: an
// intent whose owner was lost is simply begun again. Once the child exists
// the call records it (RecordDelegated) and stays Started with the child's
// name: it is no longer IO in flight. When nothing else of the batch is in
// flight the parent releases its claim (awaitChildren) and mirrors its
// children (ObserveChildren) until each has ended; a child's end is the
// call's outcome and its usage is charged to the parent exactly once,
// keyed by the child's UID, in the same commit.

// defaultAgentParameters is the parameters schema of an agent tool that
// declares none: the child's spec.input.
const defaultAgentParameters = `{"type":"object","properties":{"input":{"type":"string",` +
	`"description":"what the delegated agent is asked to do"}},"required":["input"]}`

// maxChildren bounds status.children (its MaxItems).
const maxChildren = exagentv1.MaxChildRuns

// maxChildMessage bounds a mirrored child's message (ChildRun.message).
const maxChildMessage = exagentv1.MaxChildMessageBytes

// childHashLen is how many hex digits of a hash name a child.
const childHashLen = 10

// ChildName is the deterministic name of the child a delegation call of
// parent (its name and UID) creates: the parent's name, shortened to fit,
// and a hash of the parent's UID and the call id, at most 63 characters so
// it also fits a label value. The UID is hashed so that two parents whose
// long names share the part that is kept never name the same child.
func ChildName(parent, parentUID, callID string) string {
	h := canonical.Hash([]byte(parentUID + "/" + callID))[len("sha256:"):][:childHashLen]
	return shorten(parent, 63-childHashLen-1) + "-" + h
}

// LegacyChildName is the name versions before ChildName hashed the parent's
// UID gave a child (a hash of the call id alone). It is the name of a child
// such a version may have created for an intent it journaled without the
// child's name: that call keeps it when it is begun again (childNameFor),
// so an upgrade mid-delegation finds the child instead of making a second.
func LegacyChildName(parent, callID string) string {
	h := canonical.Hash([]byte(callID))[len("sha256:"):][:childHashLen]
	return shorten(parent, 63-childHashLen-1) + "-" + h
}

// shorten cuts s to at most n bytes and drops trailing separators, so the
// joined name still starts and ends alphanumeric.
func shorten(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimRight(s, "-.")
}

// AwaitingChildren reports whether the run holds no claim while child runs
// it waits for work: delegation calls of its batch whose children exist,
// or children it withdrew that have not ended yet (withdraw.go). No
// process owns it, and no recovery applies (the children's ends move it on).
func AwaitingChildren(s Status) bool {
	return s.Claim == nil && !s.Phase.IsTerminal() && s.Phase != "" && (anyCall(&s, delegated) || withdrawing(&s, nil))
}

// delegated: a delegation call whose child exists and has not ended.
func delegated(c *exagentv1.ToolCall) bool {
	return c.State == exagentv1.CallStarted && c.Child != ""
}

// isDelegation reports whether tool is an agent tool of the current Agent.
func (e *Env) isDelegation(tool string) bool {
	t := e.specs[tool]
	return t != nil && t.Agent != nil
}

// Depth is how many delegations lie between the run and its root (0 for a root).
func (e *Env) Depth() int {
	if d := e.in.Run.Delegation; d != nil {
		return len(d.Ancestry)
	}
	return 0
}

// depthLeft is how many more levels of delegation may go below the run:
// its Agent's maxDepth, narrowed by what its ancestors left it.
func (e *Env) depthLeft() int32 {
	left := e.in.Agent.Limits.Depth()
	if d := e.in.Run.Delegation; d != nil && d.Limits.MaxDepth != nil && *d.Limits.MaxDepth < left {
		left = *d.Limits.MaxDepth
	}
	if h := e.held; h != nil && h.MaxDepth != nil && *h.MaxDepth < left {
		left = *h.MaxDepth // journaled at the first claim (limits.go)
	}
	return left
}

// delegationUnavailable says why a delegation call cannot be made at this
// depth ("" when it can): the model is told, nothing runs.
func (e *Env) delegationUnavailable(tool string) string {
	if !e.isDelegation(tool) || e.depthLeft() >= 1 {
		return ""
	}
	return fmt.Sprintf("%s: tool %q delegates to agent %q, but this run is at delegation depth %d and limits.maxDepth "+
		"(what remains of it over this run's ancestors) allows no deeper delegation. The call was not run.",
		exagentv1.ReasonMaxDepthExceeded, tool, e.specs[tool].Agent.AgentRef.Name, e.Depth())
}

// narrowLimits bounds the Agent's limits by what the run's ancestors
// reserved for it: authority only narrows. maxRuns is always set (the
// Agent's default when it sets none).
func narrowLimits(agent exagentv1.LimitsSpec, d *exagentv1.Delegation) exagentv1.LimitsSpec {
	out := *agent.DeepCopy()
	out.MaxRuns = new(agent.Runs())
	if d == nil {
		return out
	}
	out.MaxSteps = minPtr(out.MaxSteps, d.Limits.MaxSteps)
	out.MaxToolCalls = minPtr(out.MaxToolCalls, d.Limits.MaxToolCalls)
	out.MaxTokens = minPtr(out.MaxTokens, d.Limits.MaxTokens)
	out.MaxRuns = minPtr(out.MaxRuns, d.Limits.MaxRuns)
	return out
}

func minPtr[T int32 | int64](a, b *T) *T {
	switch {
	case a == nil:
		return b
	case b == nil || *a <= *b:
		return a
	}
	return b
}

// ChildPlan is what the controller creates as a delegation call's effect.
type ChildPlan struct {
	Name   string
	Labels map[string]string
	Spec   exagentv1.AgentRunSpec
}

// PlanChild builds the child run of delegation call callID, Started by
// the current attempt, from the entry its intent journaled in
// status.children (name and reservation): its labels, spec.input from the
// arguments (the "input" string, or the arguments' JSON), the parent's
// ServiceAccount, deadline, approval timeout and lease, the root's
// requester, and its place in the tree with the limits reserved for it and
// the active time left. refusal is non-empty when no child may be created
// (no active time is left): the call fails with it and the model sees why.
func PlanChild(s Status, env *Env, callID string, now time.Time) (plan ChildPlan, refusal string, err error) {
	env = env.forRun(&s) // the child's active time is what is left of the parent's, as journaled (limits.go)
	i := findCall(&s, callID)
	if i < 0 {
		return ChildPlan{}, "", notPendingf("no call %q", callID)
	}
	c := &s.Calls[i]
	t := env.tool(c.Tool)
	if t == nil || t.Agent == nil {
		return ChildPlan{}, "", conflictf("call %q is not of an agent tool", callID)
	}
	if msg := env.delegationUnavailable(c.Tool); msg != "" {
		return ChildPlan{}, msg, nil
	}
	j := findChild(&s, callID)
	if j < 0 {
		return ChildPlan{}, "", conflictf("call %q has no child journaled with its intent", callID)
	}
	entry := &s.Children[j]
	run := env.in.Run
	active, refusal := activeLeft(&s, env, now)
	if refusal != "" {
		return ChildPlan{}, refusal, nil
	}
	self := exagentv1.RunReference{Name: env.in.RunName, UID: env.in.RunUID}
	d := &exagentv1.Delegation{Parent: self, Root: self, CallID: callID}
	if entry.Reserved != nil {
		d.Limits = *entry.Reserved.DeepCopy()
	}
	if d.Limits.MaxDepth == nil {
		d.Limits.MaxDepth = new(env.depthLeft() - 1)
	}
	if p := run.Delegation; p != nil {
		d.Root = p.Root
		d.Ancestry = append(d.Ancestry, p.Ancestry...)
	}
	d.Ancestry = append(d.Ancestry, env.in.RunUID+"/"+callID)
	spec := exagentv1.AgentRunSpec{
		AgentRef:           t.Agent.AgentRef,
		Input:              childInput(c.Args),
		Deadline:           run.Deadline.DeepCopy(),
		ApprovalTimeout:    run.ApprovalTimeout,
		ActiveTimeLimit:    active,
		LeaseDuration:      run.LeaseDuration,
		ServiceAccountName: run.ServiceAccountName,
		RequestedBy:        run.RequestedBy.DeepCopy(),
		Delegation:         d,
	}
	return ChildPlan{
		Name: entry.Name,
		Labels: map[string]string{
			exagentv1.LabelParentRun: exagentv1.LabelValue(env.in.RunName),
			exagentv1.LabelRootRun:   exagentv1.LabelValue(d.Root.Name),
		},
		Spec: spec,
	}, "", nil
}

// activeLeft is the active time left for a child: the run's limit less
// what was used (this claim's time included); "" when there is no limit.
// Children work in parallel with one another, so each may use all of it.
func activeLeft(s *Status, env *Env, now time.Time) (exagentv1.Duration, string) {
	limit, never := env.ActiveTimeLimit()
	if never {
		return "", ""
	}
	rem := limit - s.Ledger.ActiveTimeUsed.Duration - elapsedActive(s, now)
	if rem < time.Second {
		return "", fmt.Sprintf("%s: limit activeTime (%s) leaves no time for a child run. The call was not run.",
			exagentv1.ReasonLimitExceeded, limit)
	}
	return exagentv1.Duration(rem.Truncate(time.Second).String()), ""
}

// childInput is the child's spec.input: the arguments' "input" string, or
// the arguments themselves as JSON text.
func childInput(args string) string {
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err == nil {
		if in, ok := obj["input"].(string); ok && in != "" {
			return bound(in, maxContent)
		}
	}
	if args == "" {
		args = "{}"
	}
	return bound(args, maxContent)
}

// ChildRef is the child run a delegation call created.
type ChildRef struct {
	Name  string
	UID   string
	Agent string
}

// RecordDelegated records that the child of a delegation call exists: the
// call stays Started, now with the child's name (no longer IO in flight),
// and its entry in status.children (journaled with the intent) gets the
// child's UID.
//
// Touches: the call's child, the child's entry (uid, agent, phase).
// Guards: the fence; the call is a delegation call Started by this very
// attempt with no child yet (or this same child); the child has the name
// its entry journaled; children stay bounded.
func RecordDelegated(s Status, env *Env, f Fence, callID string, child ChildRef, now time.Time) (Status, error) {
	if err := checkFence(&s, f, now); err != nil {
		return s, err
	}
	i := findCall(&s, callID)
	if i < 0 {
		return s, notPendingf("no call %q", callID)
	}
	c := &s.Calls[i]
	switch {
	case c.State != exagentv1.CallStarted:
		return s, notPendingf("call %q is %s, not Started", callID, c.State)
	case c.Attempt != f.Attempt:
		return s, staleFencef("call %q was started by attempt %d, not %d", callID, c.Attempt, f.Attempt)
	case c.Child != "" && c.Child != child.Name:
		return s, conflictf("call %q already has child %q, not %q", callID, c.Child, child.Name)
	}
	if j := findChild(&s, callID); j >= 0 && s.Children[j].Name != child.Name {
		return s, conflictf("call %q journaled child %q, not %q", callID, s.Children[j].Name, child.Name)
	}
	st := clone(s)
	st.Calls[i].Child = child.Name
	entry := exagentv1.ChildRun{Name: child.Name, UID: child.UID, CallID: callID, Agent: child.Agent,
		Phase: exagentv1.PhaseQueued}
	if j := findChild(&st, callID); j >= 0 {
		e := &st.Children[j]
		e.UID, e.Agent, e.Phase = child.UID, child.Agent, exagentv1.PhaseQueued
	} else {
		if len(st.Children) >= maxChildren {
			return s, errorf(KindTooLarge, exagentv1.ReasonStatusTooLarge, "the run has %d child runs, the most it may have", maxChildren)
		}
		st.Children = append(st.Children, entry)
	}
	return st, nil
}

func findChild(s *Status, callID string) int {
	for i := range s.Children {
		if s.Children[i].CallID == callID {
			return i
		}
	}
	return -1
}

// ChildRefused closes a delegation call whose child could not be created
// (the name is taken by a run that is not this call's child, admission
// refused it, no active time is left): a failed outcome the model sees.
// No child of this run exists, so its entry is settled: the reservation is
// released, nothing is charged.
//
// Touches: the call's state and outcome, its entry's charged and message.
// Guards: the fence; the call is a delegation call Started by this attempt
// with no child.
func ChildRefused(s Status, env *Env, f Fence, callID, message string, now time.Time) (Status, error) {
	if i := findCall(&s, callID); i >= 0 && s.Calls[i].Child != "" {
		return s, notPendingf("call %q already has its child %q", callID, s.Calls[i].Child)
	}
	st, err := RecordOutcome(s, env, f, ToolResult{CallID: callID, Kind: ResultFailed, Output: message}, now)
	if err != nil {
		return s, err
	}
	if j := findChild(&st, callID); j >= 0 {
		e := &st.Children[j]
		e.Charged, e.Message = true, bound(message, maxChildMessage)
	}
	return st, nil
}

// awaitChildren hands the run back while its children work: the claim is
// released (unused active time refunded) and the phase mirrors them.
func awaitChildren(st *Status, env *Env, now time.Time) Action {
	releaseClaim(st, env, now)
	mirrorChildren(st)
	return Action{Kind: ActAwaitChildren, Reason: st.Reason, Message: st.Message}
}

// ChildObservation is what the controller read of one child run: its UID
// and status, or Missing when it does not exist. Foreign marks a run of
// the child's name that is not this run's child (another parent's, or
// made by hand): it is never taken for the child.
type ChildObservation struct {
	UID     string
	Missing bool
	Foreign bool
	Status  *exagentv1.AgentRunStatus
}

// ChildEventKind names what happened to a child, for the parent's Events
// and, for ChildWithdrawn, what the controller must do.
type ChildEventKind string

const (
	ChildPaused ChildEventKind = "ChildPaused"
	ChildEnded  ChildEventKind = "ChildEnded"
	// ChildWithdrawn: the run no longer awaits this child, which has not
	// ended: the controller ends it (EndByParent with the event's reason
	// and message) and a later observation charges it.
	ChildWithdrawn ChildEventKind = "ChildWithdrawn"
)

// ChildEvent is one change of a child the parent's Events report.
type ChildEvent struct {
	Kind    ChildEventKind
	Child   string
	Reason  string
	Message string
}

// ObserveChildren folds what the controller read of the children into a
// run that waits for them (AwaitingChildren). For each delegated call's
// child: its entry in status.children takes its phase, pending approvals
// (its own and its descendants') and message; a child that ended — and
// whose own children are settled, so its ledger is final — closes its call
// (Succeeded with its output, otherwise Failed with its phase, reason and
// message) and its ledger is charged to this run's, once per child (the
// entry's charged, which also releases its reservation), in the same
// state; a missing (or replaced) child closes its call Failed. The
// children the run withdrew are settled as WithdrawChildren says. Then
// the phase mirrors the children: Uncertain while one is Uncertain,
// AwaitingApproval while one waits for a human (the message names the
// child and what it waits for), Running otherwise — unless the run's own
// calls or approvals say more (its own pending approvals, an own Uncertain
// call, or Approved: waiting for a worker). Once no child is left the run
// is Queued (or Approved) for a worker to go on.
//
// Touches: calls (state, outcome), children, ledger, phase, reason, message.
// Guards: the run awaits children (no claim, a child to wait for).
func ObserveChildren(s Status, env *Env, obs map[string]ChildObservation, now time.Time) (Status, []ChildEvent, error) {
	if !AwaitingChildren(s) && !withdrawing(&s, env) {
		return s, nil, notPendingf("run %s is not waiting for child runs", phaseName(s.Phase))
	}
	st := clone(s)
	var events []ChildEvent
	for i := range st.Calls {
		c := &st.Calls[i]
		if !delegated(c) {
			continue
		}
		j := findChild(&st, c.ID)
		if j < 0 {
			return s, nil, corruptf("call %q has child %q but no entry in status.children", c.ID, c.Child)
		}
		entry := &st.Children[j]
		o, ok := obs[c.Child]
		if !ok || o.Missing || o.Foreign || o.Status == nil || (entry.UID != "" && o.UID != entry.UID) {
			what := "was deleted before it ended"
			if ok && !o.Missing && (o.Status != nil || o.Foreign) {
				what = fmt.Sprintf("was replaced by another run of that name (uid %s, not %s)", o.UID, entry.UID)
			}
			msg := fmt.Sprintf("%s: child run %s %s; nothing of its work is known.", exagentv1.ReasonChildRunMissing, c.Child, what)
			closeChildCall(c, false, msg, now)
			entry.Phase, entry.PendingApprovals, entry.Message = "", 0, bound(msg, maxChildMessage)
			settleMissing(&st, entry)
			events = append(events, ChildEvent{Kind: ChildEnded, Child: c.Child, Message: msg})
			continue
		}
		cs := o.Status
		before := entry.Phase
		entry.Phase = cs.Phase
		entry.PendingApprovals = treePending(cs)
		entry.Message = bound(cs.Message, maxChildMessage)
		if cs.Phase.IsTerminal() && subtreeSettled(cs) {
			ok := cs.Phase == exagentv1.PhaseSucceeded
			result := cs.Output
			if !ok {
				result = fmt.Sprintf("%s: child run %s (agent %s) ended %s (%s): %s", exagentv1.ReasonChildRunFailed,
					c.Child, entry.Agent, cs.Phase, cs.Reason, cs.Message)
			}
			closeChildCall(c, ok, result, now)
			if !entry.Charged {
				charge(&st.Ledger, &cs.Ledger)
				entry.Charged = true
			}
			entry.PendingApprovals = 0
			events = append(events, ChildEvent{Kind: ChildEnded, Child: c.Child,
				Message: fmt.Sprintf("child run %s ended %s: %s", c.Child, cs.Phase, cs.Message)})
			continue
		}
		if cs.Phase == exagentv1.PhaseAwaitingApproval && before != exagentv1.PhaseAwaitingApproval {
			events = append(events, ChildEvent{Kind: ChildPaused, Child: c.Child,
				Message: fmt.Sprintf("child run %s waits: %s", c.Child, cs.Message)})
		}
	}
	events = append(events, withdrawChildren(&st, env, obs)...)
	mirrorChildren(&st)
	return st, events, nil
}

// subtreeSettled reports whether a child's own children are all settled:
// only then is its ledger final (what they used is charged into it).
func subtreeSettled(cs *exagentv1.AgentRunStatus) bool {
	for i := range cs.Children {
		if !cs.Children[i].Charged {
			return false
		}
	}
	return true
}

// treePending counts the approvals pending in a child and below it.
func treePending(cs *exagentv1.AgentRunStatus) int32 {
	n := cs.PendingApprovals
	for i := range cs.Children {
		if !cs.Children[i].Phase.IsTerminal() {
			n += cs.Children[i].PendingApprovals
		}
	}
	return n
}

// charge adds a child's usage (its own and everything charged to it by its
// descendants) to the parent's ledger; the child itself is one run of the
// tree.
func charge(l, child *exagentv1.Ledger) {
	l.Requests += child.Requests
	l.ChildRequests += child.Requests
	l.ToolCalls += child.ToolCalls
	l.PromptTokens += child.PromptTokens
	l.CompletionTokens += child.CompletionTokens
	l.CacheCreationTokens += child.CacheCreationTokens
	l.CacheReadTokens += child.CacheReadTokens
	l.ChildTokens += child.PromptTokens + child.CompletionTokens
	l.CostNanos += child.CostNanos
	l.ChildCostNanos += child.CostNanos
	l.ActiveTimeUsed.Duration += child.ActiveTimeUsed.Duration
	l.Runs += 1 + child.Runs
}

// settleMissing settles the entry of a child that is gone: nothing of its
// usage is known; a child that was recorded existed, and is one run of
// the tree. Its reservation is released.
func settleMissing(st *Status, e *exagentv1.ChildRun) {
	if e.Charged {
		return
	}
	if e.UID != "" {
		st.Ledger.Runs++
	}
	e.Charged = true
}

func closeChildCall(c *exagentv1.ToolCall, ok bool, result string, now time.Time) {
	c.State = exagentv1.CallFailed
	if ok {
		c.State = exagentv1.CallSucceeded
	}
	c.Outcome = &exagentv1.CallOutcome{Succeeded: ok, Result: bound(result, maxContent), At: microTimePtr(now)}
}

// mirrorChildren sets the phase of a run with no claim from its children,
// where its own journal does not decide it.
func mirrorChildren(st *Status) {
	if st.Claim != nil || st.Phase.IsTerminal() || anyCall(st, isUncertain) || st.PendingApprovals > 0 ||
		st.Phase == exagentv1.PhaseApproved {
		return // the run's own state speaks: an owner, an end, its own Resolve or decisions
	}
	if !anyCall(st, delegated) && !withdrawing(st, nil) {
		setPhase(st, resumePhase(st), exagentv1.ReasonChildrenEnded, "every child run of the batch ended; waiting for a worker to go on")
		return
	}
	var uncertain, waiting, working []string
	for i := range st.Children {
		ch := &st.Children[i]
		ci := findCall(st, ch.CallID)
		switch {
		case withdrawnEntry(st, nil, ch):
			working = append(working, ch.Name+" (withdrawn: it is cancelled, and charged once it ended)")
			continue
		case ci < 0 || !delegated(&st.Calls[ci]):
			continue
		}
		desc := fmt.Sprintf("%s (tool %s)", ch.Name, st.Calls[ci].Tool)
		switch ch.Phase {
		case exagentv1.PhaseUncertain:
			uncertain = append(uncertain, desc+": "+ch.Message)
		case exagentv1.PhaseAwaitingApproval:
			waiting = append(waiting, desc+": "+ch.Message)
		default:
			working = append(working, desc)
		}
	}
	switch {
	case len(uncertain) > 0:
		setPhase(st, exagentv1.PhaseUncertain, exagentv1.ReasonChildUncertain,
			"child run "+strings.Join(uncertain, "; child run "))
	case len(waiting) > 0:
		setPhase(st, exagentv1.PhaseAwaitingApproval, exagentv1.ReasonChildAwaitingApproval,
			"child run "+strings.Join(waiting, "; child run "))
	default:
		setPhase(st, exagentv1.PhaseRunning, exagentv1.ReasonWaitingForChildren,
			"waiting for child run(s) "+strings.Join(working, ", "))
	}
}

// loseIntent settles a Started call whose owner is gone. A delegation call
// without its child recorded is begun again (creating the child again
// finds the same one: its entry keeps the name and the reservation); any
// other call's effect may have happened: Uncertain.
func loseIntent(st *Status, env *Env, c *exagentv1.ToolCall) {
	if c.Child == "" && (env.isDelegation(c.Tool) || findChild(st, c.ID) >= 0) {
		c.State = exagentv1.CallAllowed
		if approvalCovers(st, c.ID, c.PayloadHash) {
			c.State = exagentv1.CallApproved
		}
		return
	}
	c.State = exagentv1.CallUncertain
}

// closeEndedDelegation closes a delegation call whose run ended before its
// child did (or before its child was recorded): the child, if it was
// created, is cancelled with it (by the controller, found by its journaled
// name), so the call's outcome is a failure, never Uncertain.
func closeEndedDelegation(st *Status, c *exagentv1.ToolCall, now time.Time) {
	name := c.Child
	if j := findChild(st, c.ID); name == "" && j >= 0 {
		name = st.Children[j].Name
	}
	closeChildCall(c, false, fmt.Sprintf("the run ended before its child run %s did; the child is cancelled with it", name), now)
}

// Ancestor is one ancestor of a child run as the caller read it: the run
// and its Agent (nil when the Agent does not exist).
type Ancestor struct {
	Run   *exagentv1.AgentRun
	Agent *exagentv1.Agent
}

// AuthorizeAncestors applies to a decision on a child run what each
// ancestor's policy says of deciders (ids[i] are ancestors[i]'s
// identities): the identities that never decide, the approvers, and
// forbidSelfApproval against the ancestor's requester — the root's, which
// every child carries. A decision must pass all of them besides the
// child's own Agent (docs/architecture.md §5: authority only narrows). An ancestor
// without an Agent adds only the identities that never decide (the
// caller refuses anything but a Cancel on such a run).
func AuthorizeAncestors(ancestors []Ancestor, ids []Identities, actor exagentv1.Actor) error {
	for i := range ancestors {
		a := &ancestors[i]
		var policy exagentv1.PolicySpec
		if a.Agent != nil {
			policy = a.Agent.Spec.Policy
		}
		var id Identities
		if i < len(ids) {
			id = ids[i]
		}
		if err := Authorize(policy, &a.Run.Spec, id, actor); err != nil {
			e, ok := AsError(err)
			if !ok {
				return err
			}
			return errorf(e.Kind, e.Reason, "ancestor run %s (agent %s): %s", a.Run.Name, a.Run.Spec.AgentRef.Name, e.Message)
		}
	}
	return nil
}
