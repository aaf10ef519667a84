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

package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// RequestKind is what kind of IO an oracle observed.
type RequestKind string

const (
	// KindHTTP is a request an http tool server received.
	KindHTTP RequestKind = "http"
	// KindBuiltin is a builtin mutation observed on the cluster object it changed.
	KindBuiltin RequestKind = "builtin"
	// KindModel is a chat-completion request the model server received.
	KindModel RequestKind = "model"
)

// Request is one IO an oracle observed, with what it knows of the store at
// that moment.
type Request struct {
	Kind RequestKind
	// Server names the endpoint (tool path, model, object) for messages.
	Server string
	Run    types.NamespacedName
	// RunUID is the run the IO belongs to (from the Idempotency-Key, or the
	// server's read of the run).
	RunUID types.UID
	// CallID and Key identify a tool call (not set for model requests).
	CallID, Key string
	// Step is the model step a model request is for (its assistant messages).
	Step int32
	// Idempotent marks a tool the Agent declares idempotent: its server
	// applies the effect once per key, and re-sends are allowed.
	Idempotent bool
	// Applied says the request applied an effect (a re-send of a key an
	// idempotent server already applied did not).
	Applied bool
	// At is when the request arrived (this machine's wall clock, which the
	// managers' lease times share).
	At time.Time
	// StoreRV bounds the store at arrival. For http and model requests it is
	// the run's resourceVersion read by the server (a quorum read) while it
	// held the request: every write the manager made before sending is at or
	// below it. For a builtin it is the revision of the mutation itself:
	// the run and the object live in one etcd, whose revisions are one
	// global order, so the intent must be strictly older.
	StoreRV int64
	// EffectRV says StoreRV is the effect's own revision (builtin).
	EffectRV bool
	// Messages are a model request's messages, in order (model requests only).
	Messages []ChatMessage
}

// Version is one recorded write of a run: the object as the watch
// delivered it, ordered by resourceVersion (etcd's revision).
type Version struct {
	RV      int64
	Seen    time.Time
	Deleted bool
	Run     *exagentv1.AgentRun
}

// Decision is one ApprovalDecision a scenario created (or tried to).
type Decision struct {
	Run  types.NamespacedName
	Name string
	Kind exagentv1.DecisionKind
	// Actor is the user who created it; Authorized says the scenario gave
	// that user the right to decide it (RBAC and policy).
	Actor      string
	Authorized bool
}

// History is everything the oracles recorded in one scenario.
type History struct {
	// Runs are the recorded versions of every run, by UID.
	Runs      map[types.UID][]Version
	Requests  []Request
	Decisions []Decision
	// Deciders are the users allowed to decide in this scenario.
	Deciders map[string]bool
}

// Rules of the check; every Violation names one.
const (
	RuleIntentBeforeIO      = "intent-before-io"
	RuleStaleClaimIO        = "io-on-stale-claim"
	RuleDuplicateEffect     = "duplicate-effect"
	RuleTwoOutcomes         = "two-outcomes"
	RuleAttemptRegressed    = "attempt-went-back"
	RuleStaleCommit         = "commit-from-stale-attempt"
	RuleExpiredLeaseIntent  = "intent-on-expired-lease"
	RuleUnauthorized        = "unauthorized-decision"
	RuleDecisionsExceed     = "decisions-exceed-approvals"
	RuleApprovalRegressed   = "approval-went-back"
	RuleNonTerminal         = "run-not-terminal"
	RuleFailedButApplied    = "failed-but-applied"
	RuleUnknownRunRequest   = "io-for-unknown-run"
	RuleIdempotencyKeyWrong = "wrong-idempotency-key"
)

// Violation is one broken rule, with the run's recorded history.
type Violation struct {
	Rule   string
	Run    string
	UID    types.UID
	RV     int64
	Detail string
	// Timeline is the run's history around the offending write.
	Timeline string
}

func (v Violation) String() string {
	s := fmt.Sprintf("[%s] run %s (uid %s): %s", v.Rule, v.Run, v.UID, v.Detail)
	if v.Timeline != "" {
		s += "\n" + v.Timeline
	}
	return s
}

// Check judges a recorded history offline (docs/architecture.md §3, §4; issue 9 R4):
//
//   - intent before IO: every request had a committed intent — a version at
//     or below the request's StoreRV (strictly below for a builtin) where
//     the call is Started (a tool) or the step's model request is
//     outstanding (a model);
//   - no IO on a stale claim: a request arrived before the lease of the
//     attempt that committed its intent ran out (the latest lease any write
//     of that attempt recorded), and a builtin effect landed before any
//     other attempt claimed the run or the call was declared Uncertain;
//   - no duplicate effect: one applied effect per Idempotency-Key;
//   - one outcome per call: once confirmed, a call's outcome never changes;
//   - attempts never go back (status.attempts, claim.attempt);
//   - no commit from a stale attempt: an intent is written by the claim it
//     names, on a lease valid when it was made; an owner's outcome is
//     confirmed by the attempt that started the call, on top of its claim;
//   - decisions: only the scenario's deciders decide, an approval is decided
//     once, and applied decisions never outnumber the decisions made;
//   - every run ends in a terminal phase, and no call is journaled Failed
//     when its tool applied the effect.
func Check(h History) []Violation {
	var out []Violation
	uids := make([]types.UID, 0, len(h.Runs))
	for uid := range h.Runs {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	for _, uid := range uids {
		vs := sortedVersions(h.Runs[uid])
		h.Runs[uid] = vs
		out = append(out, checkRun(uid, vs, h)...)
	}
	out = append(out, checkRequests(h)...)
	return out
}

func sortedVersions(vs []Version) []Version {
	out := append([]Version(nil), vs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].RV < out[j].RV })
	// A watch re-established after a disconnect may deliver a version twice.
	dedup := out[:0]
	for _, v := range out {
		if len(dedup) > 0 && dedup[len(dedup)-1].RV == v.RV {
			continue
		}
		dedup = append(dedup, v)
	}
	return dedup
}

// objects are the live (not deleted) versions.
func objects(vs []Version) []Version {
	out := make([]Version, 0, len(vs))
	for _, v := range vs {
		if !v.Deleted && v.Run != nil {
			out = append(out, v)
		}
	}
	return out
}

func runName(vs []Version) string {
	for _, v := range vs {
		if v.Run != nil {
			return v.Run.Namespace + "/" + v.Run.Name
		}
	}
	return "?"
}

// checkRun walks one run's writes in resourceVersion order, each version
// against the one before it, through one check per invariant.
func checkRun(uid types.UID, all []Version, h History) []Violation {
	vs := objects(all)
	if len(vs) == 0 {
		return nil
	}
	w := &runWalk{name: runName(vs), uid: uid, vs: vs, h: h, outcomes: map[string]confirmed{}}
	for i := range vs {
		st := &vs[i].Run.Status
		var prev *exagentv1.AgentRunStatus
		if i > 0 {
			prev = &vs[i-1].Run.Status
		}
		w.attemptsNeverGoBack(i, st)
		for ci := range st.Calls {
			c := &st.Calls[ci]
			var p *exagentv1.ToolCall
			if prev != nil {
				p = prev.Call(c.ID)
			}
			w.intentByItsAttempt(i, prev, st, c, p)
			w.confirmedByItsOwner(i, prev, c, p)
			w.oneOutcome(i, c, p)
		}
		w.modelIntentByItsAttempt(i, prev, st)
		w.approvalsDecidedOnce(i, prev, st)
		w.receiptsByDeciders(i, prev, st)
	}
	w.endsTerminal(all)
	return append(w.out, checkReceipts(w.name, uid, vs, h)...)
}

// runWalk is the state of checkRun's walk over one run's versions.
type runWalk struct {
	name string
	uid  types.UID
	vs   []Version
	h    History
	out  []Violation
	// maxAttempts and maxClaim are the highest attempt counts seen so far.
	maxAttempts, maxClaim int64
	// outcomes are the calls' first confirmed outcomes.
	outcomes map[string]confirmed
}

// confirmed is a call's outcome as first seen, with the version it was seen at.
type confirmed struct {
	state     exagentv1.CallState
	succeeded bool
	result    string
	rv        int64
}

func (w *runWalk) bad(rule string, i int, format string, a ...any) {
	w.out = append(w.out, Violation{Rule: rule, Run: w.name, UID: w.uid, RV: w.vs[i].RV,
		Detail: fmt.Sprintf(format, a...), Timeline: Timeline(w.vs, i)})
}

// attemptsNeverGoBack: status.attempts and the claim's attempt never
// decrease, and a claim's attempt is never above status.attempts.
func (w *runWalk) attemptsNeverGoBack(i int, st *exagentv1.AgentRunStatus) {
	if st.Attempts < w.maxAttempts {
		w.bad(RuleAttemptRegressed, i, "status.attempts went from %d to %d", w.maxAttempts, st.Attempts)
	}
	w.maxAttempts = max(w.maxAttempts, st.Attempts)
	if c := st.Claim; c != nil {
		if c.Attempt < w.maxClaim {
			w.bad(RuleAttemptRegressed, i, "claim attempt %d (holder %s) written after attempt %d was seen", c.Attempt, c.Holder, w.maxClaim)
		}
		if c.Attempt > st.Attempts {
			w.bad(RuleAttemptRegressed, i, "claim attempt %d is above status.attempts %d", c.Attempt, st.Attempts)
		}
		w.maxClaim = max(w.maxClaim, c.Attempt)
	}
}

// intentByItsAttempt: a new intent (the call became Started, or was
// re-started by another attempt) is written by the attempt it names,
// within a lease that attempt holds.
func (w *runWalk) intentByItsAttempt(i int, prev, st *exagentv1.AgentRunStatus, c, p *exagentv1.ToolCall) {
	if c.State != exagentv1.CallStarted || (p != nil && p.State == exagentv1.CallStarted && p.Attempt == c.Attempt) {
		return
	}
	if reason := intentWriter(prev, st, c.Attempt); reason != "" {
		w.bad(RuleStaleCommit, i, "intent of call %s (attempt %d) %s", c.ID, c.Attempt, reason)
	}
	// The fence is the commit's CAS (docs/architecture.md §4.3 as refined by the
	// live-owner rule): a live owner whose lease lapsed may take it back
	// in the very write that carries the intent, with a new lease valid
	// at the intent — the CAS on the version it read proves nobody
	// recovered the run meanwhile. An intent outside any lease it wrote
	// is a violation.
	if prev != nil && prev.Claim != nil && prev.Claim.Attempt == c.Attempt && c.StartedAt != nil &&
		!c.StartedAt.Time.Before(prev.Claim.LeaseExpiresAt.Time) {
		takenBack := st.Claim != nil && st.Claim.Attempt == c.Attempt &&
			c.StartedAt.Time.Before(st.Claim.LeaseExpiresAt.Time) && st.Claim.LeaseExpiresAt.After(prev.Claim.LeaseExpiresAt.Time)
		if !takenBack {
			w.bad(RuleExpiredLeaseIntent, i, "intent of call %s made at %s on the lease of attempt %d that expired at %s",
				c.ID, stamp(c.StartedAt.Time), c.Attempt, stamp(prev.Claim.LeaseExpiresAt.Time))
		}
	}
}

// confirmedByItsOwner: an owner's confirmation (Started → Succeeded or
// Failed, not from a Resolve) is committed on the claim of the attempt
// that started the call.
func (w *runWalk) confirmedByItsOwner(i int, prev *exagentv1.AgentRunStatus, c, p *exagentv1.ToolCall) {
	if p == nil || p.State != exagentv1.CallStarted || !closedState(c.State) || c.State == exagentv1.CallRefused ||
		(c.Outcome != nil && c.Outcome.ResolvedBy != "") {
		return
	}
	switch {
	case prev.Claim == nil:
		w.bad(RuleStaleCommit, i, "outcome %s of call %s (started by attempt %d) committed while the run had no claim", c.State, c.ID, p.Attempt)
	case prev.Claim.Attempt != p.Attempt:
		w.bad(RuleStaleCommit, i, "outcome %s of call %s (started by attempt %d) committed on top of the claim of attempt %d",
			c.State, c.ID, p.Attempt, prev.Claim.Attempt)
	}
}

// oneOutcome: a closed call stays closed, with the one outcome it was
// first confirmed with.
func (w *runWalk) oneOutcome(i int, c, p *exagentv1.ToolCall) {
	if p != nil && closedState(p.State) && c.State != p.State {
		w.bad(RuleTwoOutcomes, i, "call %s went from %s to %s", c.ID, p.State, c.State)
	}
	if !closedState(c.State) || c.Outcome == nil {
		return
	}
	now := confirmed{state: c.State, succeeded: c.Outcome.Succeeded, result: c.Outcome.Result, rv: w.vs[i].RV}
	was, ok := w.outcomes[c.ID]
	switch {
	case !ok:
		w.outcomes[c.ID] = now
	case was.state != now.state || was.succeeded != now.succeeded || was.result != now.result:
		w.bad(RuleTwoOutcomes, i, "call %s had outcome %s %q (rv %d), now %s %q",
			c.ID, was.state, excerpt(was.result), was.rv, now.state, excerpt(now.result))
	}
}

// modelIntentByItsAttempt: a new model request intent is written by the
// attempt it names.
func (w *runWalk) modelIntentByItsAttempt(i int, prev, st *exagentv1.AgentRunStatus) {
	m := st.Cursor.ModelRequest
	if m == nil || (prev != nil && prev.Cursor.ModelRequest != nil && *prev.Cursor.ModelRequest == *m) {
		return
	}
	if reason := intentWriter(prev, st, m.Attempt); reason != "" {
		w.bad(RuleStaleCommit, i, "model request %d of step %d (attempt %d) %s", m.Request, st.Cursor.Step, m.Attempt, reason)
	}
}

// approvalsDecidedOnce: an approval is decided once, by a decider, and
// never changes after.
func (w *runWalk) approvalsDecidedOnce(i int, prev, st *exagentv1.AgentRunStatus) {
	for ai := range st.Approvals {
		a := &st.Approvals[ai]
		var p *exagentv1.Approval
		if prev != nil {
			p = prev.Approval(a.ID)
		}
		if p != nil && p.State != exagentv1.ApprovalPending && a.State != p.State {
			w.bad(RuleApprovalRegressed, i, "approval %s went from %s to %s", a.ID, p.State, a.State)
		}
		decided := a.State == exagentv1.ApprovalApproved || a.State == exagentv1.ApprovalDenied || a.State == exagentv1.ApprovalCancelled
		if decided && (p == nil || p.State == exagentv1.ApprovalPending) {
			if a.Actor == nil || !w.h.Deciders[a.Actor.Username] {
				w.bad(RuleUnauthorized, i, "approval %s %s by %s, who is not a decider", a.ID, a.State, actorName(a.Actor))
			}
		}
	}
}

// receiptsByDeciders: every new receipt is a decider's.
func (w *runWalk) receiptsByDeciders(i int, prev, st *exagentv1.AgentRunStatus) {
	for ri := range st.Receipts {
		r := &st.Receipts[ri]
		if prev != nil && hasReceipt(prev, r.OperationID) {
			continue
		}
		if r.Actor == nil || !w.h.Deciders[r.Actor.Username] {
			w.bad(RuleUnauthorized, i, "decision %s (%s of %s) applied for %s, who is not a decider", r.OperationID, r.Decision, r.Target, actorName(r.Actor))
		}
	}
}

// endsTerminal: a run that was not deleted ended the scenario in a
// terminal phase.
func (w *runWalk) endsTerminal(all []Version) {
	last := len(w.vs) - 1
	final := &w.vs[last].Run.Status
	if lastDeleted := all[len(all)-1].Deleted; !lastDeleted && !final.Phase.IsTerminal() {
		w.bad(RuleNonTerminal, last, "the run ended the scenario %s (%s: %s)", phaseOrNew(final.Phase), final.Reason, final.Message)
	}
}

// intentWriter explains why a write recording an intent of attempt could
// not have come from that attempt's owner ("" when it could): the claim it
// writes is that attempt, which either held the claim it read or claimed
// the run in this very write.
func intentWriter(prev, st *exagentv1.AgentRunStatus, attempt int64) string {
	switch {
	case st.Claim == nil:
		return "was written with no claim on the run"
	case st.Claim.Attempt != attempt:
		return fmt.Sprintf("was written under the claim of attempt %d", st.Claim.Attempt)
	case prev == nil:
		return ""
	case prev.Claim != nil && prev.Claim.Attempt == attempt:
		return ""
	case st.Attempts > prev.Attempts:
		return "" // claimed in the same write
	case prev.Claim == nil:
		return "was written on top of a version with no claim, without claiming the run"
	}
	return fmt.Sprintf("was written on top of the claim of attempt %d", prev.Claim.Attempt)
}

// checkReceipts: applied decisions never outnumber the decisions the
// scenario made for the run, and each names one of them.
func checkReceipts(name string, uid types.UID, vs []Version, h History) []Violation {
	final := vs[len(vs)-1].Run
	made := map[string]Decision{}
	for _, d := range h.Decisions {
		if d.Run.Namespace == final.Namespace && d.Run.Name == final.Name {
			made[d.Name] = d
		}
	}
	var out []Violation
	applied := map[exagentv1.DecisionKind]int{}
	authorized := map[exagentv1.DecisionKind]int{}
	for _, d := range made {
		if d.Authorized {
			authorized[d.Kind]++
		}
	}
	for _, r := range final.Status.Receipts {
		applied[exagentv1.DecisionKind(r.Decision)]++
		d, ok := made[r.DecisionName]
		switch {
		case !ok:
			out = append(out, Violation{Rule: RuleDecisionsExceed, Run: name, UID: uid, RV: vs[len(vs)-1].RV,
				Detail: fmt.Sprintf("receipt %s (%s of %s by %s) names decision %q, which the scenario never made",
					r.OperationID, r.Decision, r.Target, actorName(r.Actor), r.DecisionName)})
		case !d.Authorized:
			out = append(out, Violation{Rule: RuleUnauthorized, Run: name, UID: uid, RV: vs[len(vs)-1].RV,
				Detail: fmt.Sprintf("decision %s by %s, who may not decide, was applied", d.Name, d.Actor)})
		}
	}
	for kind, n := range applied {
		if n > authorized[kind] {
			out = append(out, Violation{Rule: RuleDecisionsExceed, Run: name, UID: uid, RV: vs[len(vs)-1].RV,
				Detail: fmt.Sprintf("%d %s decisions applied, %d made by deciders", n, kind, authorized[kind])})
		}
	}
	return out
}

// checkRequests holds every request against the history of its run.
func checkRequests(h History) []Violation {
	var out []Violation
	applied := map[string][]Request{}
	for _, r := range h.Requests {
		if r.Applied && r.Key != "" {
			applied[r.Key] = append(applied[r.Key], r)
		}
		vs := objects(h.Runs[r.RunUID])
		if len(vs) == 0 {
			out = append(out, Violation{Rule: RuleUnknownRunRequest, Run: r.Run.String(), UID: r.RunUID,
				Detail: fmt.Sprintf("%s request %s at %s for a run the recorder never saw", r.Kind, describe(r), stamp(r.At))})
			continue
		}
		if r.Kind == KindModel {
			out = append(out, checkModelRequest(r, vs)...)
		} else {
			out = append(out, checkToolRequest(r, vs)...)
		}
	}
	keys := make([]string, 0, len(applied))
	for k := range applied {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rs := applied[k]
		if len(rs) < 2 {
			continue
		}
		var at []string
		for _, r := range rs {
			at = append(at, fmt.Sprintf("%s (store rv %d)", stamp(r.At), r.StoreRV))
		}
		vs := objects(h.Runs[rs[0].RunUID])
		out = append(out, Violation{Rule: RuleDuplicateEffect, Run: rs[0].Run.String(), UID: rs[0].RunUID,
			Detail:   fmt.Sprintf("%s effect of key %s applied %d times: %s", rs[0].Server, k, len(rs), strings.Join(at, ", ")),
			Timeline: Timeline(vs, len(vs)-1)})
	}
	out = append(out, checkFailedButApplied(h, applied)...)
	return out
}

// checkToolRequest: a tool request (or builtin effect) had its call's
// intent committed before, under a claim still valid.
func checkToolRequest(r Request, vs []Version) []Violation {
	name := runName(vs)
	bad := func(rule string, i int, format string, a ...any) Violation {
		return Violation{Rule: rule, Run: name, UID: r.RunUID, RV: r.StoreRV,
			Detail: fmt.Sprintf(format, a...), Timeline: Timeline(vs, i)}
	}
	intent := -1
	for i, v := range vs {
		if v.RV > r.StoreRV || (r.EffectRV && v.RV == r.StoreRV) {
			break
		}
		if c := v.Run.Status.Call(r.CallID); c != nil && c.State == exagentv1.CallStarted {
			intent = i
		}
	}
	if intent < 0 {
		return []Violation{bad(RuleIntentBeforeIO, upTo(vs, r.StoreRV), "%s request %s at %s: no version at or before rv %d records call %s Started",
			r.Kind, describe(r), stamp(r.At), r.StoreRV, r.CallID)}
	}
	c := vs[intent].Run.Status.Call(r.CallID)
	var out []Violation
	if r.Key != "" && c.IdempotencyKey != r.Key {
		out = append(out, bad(RuleIdempotencyKeyWrong, intent, "%s request %s carried Idempotency-Key %q, the journal %q", r.Kind, describe(r), r.Key, c.IdempotencyKey))
	}
	if r.EffectRV {
		// The effect's revision is exact: nothing may have taken the call
		// from its intent's attempt before it landed.
		for i := intent + 1; i < len(vs) && vs[i].RV < r.StoreRV; i++ {
			st := &vs[i].Run.Status
			if cl := st.Claim; cl != nil && cl.Attempt != c.Attempt {
				out = append(out, bad(RuleStaleClaimIO, i, "%s effect %s landed at rv %d after attempt %d claimed the run (the intent was attempt %d's)",
					r.Kind, describe(r), r.StoreRV, cl.Attempt, c.Attempt))
				break
			}
			if now := st.Call(r.CallID); now != nil && now.State == exagentv1.CallUncertain {
				out = append(out, bad(RuleStaleClaimIO, i, "%s effect %s landed at rv %d after call %s was declared Uncertain at rv %d",
					r.Kind, describe(r), r.StoreRV, r.CallID, vs[i].RV))
				break
			}
		}
		return out
	}
	if end, ok := leaseEnd(vs, c.Attempt); ok && r.At.After(end) {
		out = append(out, bad(RuleStaleClaimIO, intent, "%s request %s arrived at %s, after the lease of attempt %d (which committed the intent) ended at %s",
			r.Kind, describe(r), stamp(r.At), c.Attempt, stamp(end)))
	}
	return out
}

// checkModelRequest: the step's model request intent was committed before
// the request arrived, under a claim still valid.
func checkModelRequest(r Request, vs []Version) []Violation {
	name := runName(vs)
	intent := -1
	for i, v := range vs {
		if v.RV > r.StoreRV {
			break
		}
		if st := &v.Run.Status; st.Cursor.Step == r.Step && st.Cursor.ModelRequest != nil {
			intent = i
		}
	}
	if intent < 0 {
		return []Violation{{Rule: RuleIntentBeforeIO, Run: name, UID: r.RunUID, RV: r.StoreRV,
			Detail:   fmt.Sprintf("model request for step %d at %s: no version at or before rv %d records it outstanding", r.Step, stamp(r.At), r.StoreRV),
			Timeline: Timeline(vs, upTo(vs, r.StoreRV))}}
	}
	m := vs[intent].Run.Status.Cursor.ModelRequest
	if end, ok := leaseEnd(vs, m.Attempt); ok && r.At.After(end) {
		return []Violation{{Rule: RuleStaleClaimIO, Run: name, UID: r.RunUID, RV: r.StoreRV,
			Detail: fmt.Sprintf("model request for step %d arrived at %s, after the lease of attempt %d (which committed it) ended at %s",
				r.Step, stamp(r.At), m.Attempt, stamp(end)),
			Timeline: Timeline(vs, intent)}}
	}
	return nil
}

// checkFailedButApplied: a call journaled Failed by its owner (not by a
// Resolve) whose effect an oracle saw applied was classified dishonestly.
func checkFailedButApplied(h History, applied map[string][]Request) []Violation {
	var out []Violation
	for uid, all := range h.Runs {
		vs := objects(all)
		if len(vs) == 0 {
			continue
		}
		final := vs[len(vs)-1].Run
		for _, c := range final.Status.Calls {
			if c.State != exagentv1.CallFailed || c.Outcome == nil || c.Outcome.ResolvedBy != "" || c.IdempotencyKey == "" {
				continue
			}
			if rs := applied[c.IdempotencyKey]; len(rs) > 0 {
				out = append(out, Violation{Rule: RuleFailedButApplied, Run: runName(vs), UID: uid, RV: vs[len(vs)-1].RV,
					Detail: fmt.Sprintf("call %s is journaled Failed (%q) but %s applied its effect at %s (store rv %d)",
						c.ID, excerpt(c.Outcome.Result), rs[0].Server, stamp(rs[0].At), rs[0].StoreRV),
					Timeline: Timeline(vs, len(vs)-1)})
			}
		}
	}
	return out
}

// leaseEnd is the latest lease any write of attempt recorded.
func leaseEnd(vs []Version, attempt int64) (time.Time, bool) {
	var end time.Time
	ok := false
	for _, v := range vs {
		if c := v.Run.Status.Claim; c != nil && c.Attempt == attempt && c.LeaseExpiresAt.After(end) {
			end, ok = c.LeaseExpiresAt.Time, true
		}
	}
	return end, ok
}

func upTo(vs []Version, rv int64) int {
	i := 0
	for j, v := range vs {
		if v.RV <= rv {
			i = j
		}
	}
	return i
}

func closedState(s exagentv1.CallState) bool {
	switch s {
	case exagentv1.CallSucceeded, exagentv1.CallFailed, exagentv1.CallRefused, exagentv1.CallDenied:
		return true
	}
	return false
}

func hasReceipt(s *exagentv1.AgentRunStatus, op string) bool {
	for _, r := range s.Receipts {
		if r.OperationID == op {
			return true
		}
	}
	return false
}

func actorName(a *exagentv1.Actor) string {
	if a == nil {
		return "nobody"
	}
	return a.Username
}

func phaseOrNew(p exagentv1.RunPhase) string {
	if p == "" {
		return "never started"
	}
	return string(p)
}

func describe(r Request) string {
	if r.Kind == KindModel {
		return fmt.Sprintf("to %s (step %d)", r.Server, r.Step)
	}
	return fmt.Sprintf("to %s (call %s, key %s)", r.Server, r.CallID, r.Key)
}

func excerpt(s string) string {
	const n = 80
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000000") }
