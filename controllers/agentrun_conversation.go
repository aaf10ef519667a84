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

package controllers

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/index"
	"github.com/exagent-io/exagent/internal/notify"
	"github.com/exagent-io/exagent/loop"
)

// +kubebuilder:rbac:groups=exagent.io,resources=conversations,verbs=get;list;watch

// waitTurn keeps a turn of a conversation Queued — no claim, no model
// request, no IO — while its conversation holds it: an earlier turn is
// open (loop.TurnGate), the Conversation does not exist, or it is
// suspended. When it may start, it continues the conversation
// (loop.ContinueTurn: the turn just before it, read past the cache, gives
// its transcript by reference), once; the claim follows in the same
// commit. A turn past that point is never held again.
func (r *AgentRunReconciler) waitTurn(ctx context.Context, sc *scope) error {
	ref := sc.run.Spec.ConversationRef
	if ref == nil || sc.fence != nil || sc.status.Phase != exagentv1.PhaseQueued || sc.noIO || sc.status.Turn != nil {
		return nil
	}
	hold, err := r.turnHold(ctx, sc.run, ref.Name)
	if err != nil {
		return err
	}
	if hold.reason == "" {
		return r.continueTurn(ctx, sc, hold)
	}
	if hold.skip {
		next, err := loop.SkipTurn(sc.status, sc.env, hold.reason, hold.message, sc.now)
		if err != nil {
			return fmt.Errorf("ending the turn: %w", err)
		}
		sc.set(next)
		sc.note(exagentv1.EventRunFailed, warning, "%s", next.Message)
		sc.stop = true
		return nil
	}
	if sc.status.Reason != hold.reason || sc.status.Message != hold.message {
		next, err := loop.WaitForTurn(sc.status, hold.reason, hold.message)
		if err != nil {
			return fmt.Errorf("holding the turn: %w", err)
		}
		sc.set(next)
	}
	sc.stop = true // woken when an earlier turn changes (turnsOf) or the Conversation does
	if hold.poll {
		sc.requeueAfter = forkPoll
	}
	return nil
}

// continueTurn journals the turn's place and history: the turn just
// before it (ended) is read past the cache, whose copy of an ended run is
// stripped (store.CacheOptions).
func (r *AgentRunReconciler) continueTurn(ctx context.Context, sc *scope, hold turnHold) error {
	ts := loop.TurnStart{Index: int32(hold.index), EndMarker: hold.conv.Spec.EndMarker, Now: sc.now, TokensLeft: hold.tokensLeft}
	if p := participantOf(hold.conv, sc.run); p != nil && p.Human != nil {
		ts.Human = p.Human
	}
	before, err := r.turnBefore(ctx, sc, hold)
	if err != nil || sc.stop {
		return err
	}
	if before != nil {
		run := before
		ts.Prev = &loop.PrevTurn{Name: run.Name, UID: string(run.UID), Transcript: run.Status.Transcript, History: run.Status.History,
			Calls: run.Status.Calls, Phase: run.Status.Phase, Reason: run.Status.Reason,
			Agent: run.Spec.AgentRef.Name, Binding: run.Status.Binding}
		if run.Status.Turn != nil {
			ts.Prev.Participant = run.Status.Turn.Participant
		}
	}
	next, err := loop.ContinueTurn(sc.status, sc.env, ts)
	if err != nil {
		return r.failPermanent(sc, err)
	}
	sc.set(next)
	if next.Phase == exagentv1.PhaseAwaitingApproval {
		// A person's turn: asked at once, nothing to claim until they answer.
		for i := range next.Approvals {
			sc.note(exagentv1.EventInputRequested, normal, "%s", notify.ApprovalRequestedMessage(sc.run, &next, next.Approvals[i]))
		}
		sc.note(exagentv1.EventRunPaused, normal, "%s", next.Message)
		sc.stop = true
	}
	return nil
}

// turnBefore is the ended turn whose transcript this one continues, read
// past the cache (whose copy of an ended run is stripped,
// store.CacheOptions): the turn just before it, or — for a branch's first
// turn — turn forkOf.turn of the conversation it forks. nil for a first
// turn. A turn deleted meanwhile stops the reconcile (looked at again).
func (r *AgentRunReconciler) turnBefore(ctx context.Context, sc *scope, hold turnHold) (*exagentv1.AgentRun, error) {
	name := ""
	switch {
	case hold.index > 1:
		name = hold.turns[hold.index-2].Name
	case hold.fork != "":
		name = hold.fork
	default:
		return nil, nil
	}
	key := types.NamespacedName{Namespace: sc.run.Namespace, Name: name}
	cached := &exagentv1.AgentRun{}
	if err := r.Client.Get(ctx, key, cached); err == nil {
		if whole, ok := r.mem.lastTurns.get(cached); ok {
			return whole, nil // this process ended it, and the cache holds that very version (turn_memory.go)
		}
	}
	run := &exagentv1.AgentRun{}
	if err := r.APIReader.Get(ctx, key, run); err != nil {
		if apierrors.IsNotFound(err) {
			sc.stop = true // deleted meanwhile: the turns are listed again at the next wake-up
			sc.requeueAfter = time.Second
			return nil, nil
		}
		return nil, fmt.Errorf("reading turn %s, which turn %s continues: %w", name, sc.run.Name, err)
	}
	return run, nil
}

// participantOf is the participant run takes its turn as: the one its
// conversationRef names, else the Agent participant its agentRef names
// (nil: the conversation's default agentRef).
func participantOf(conv *exagentv1.Conversation, run *exagentv1.AgentRun) *exagentv1.Participant {
	want := ""
	if run.Spec.ConversationRef != nil {
		want = run.Spec.ConversationRef.Participant
	}
	for i := range conv.Spec.Participants {
		p := &conv.Spec.Participants[i]
		if want != "" && p.Name == want || want == "" && p.AgentRef != nil && p.AgentRef.Name == run.Spec.AgentRef.Name {
			return p
		}
	}
	return nil
}

// turnHold is why a turn may not start yet (reason "" when it may), and
// the conversation's turns in order with its place among them.
type turnHold struct {
	reason, message string
	conv            *exagentv1.Conversation
	turns           []loop.TurnView
	index           int
	// fork is the turn of the forked conversation a branch's first turn
	// continues.
	fork string
	// skip: the turn will never run (its conversation ended, or its fork
	// cannot be read): it ends with reason.
	skip bool
	// tokensLeft is what the conversation's maxTokens leaves the turn.
	tokensLeft *int64
	// poll: what it waits for is another conversation's turn, whose
	// changes do not wake it: looked at again after forkPoll.
	poll bool
}

// forkPoll is how often a branch's first turn looks again at the turn it
// forks while that turn has not ended.
const forkPoll = 5 * time.Second

// turnHold says why run, a turn of conversation name, may not start yet.
func (r *AgentRunReconciler) turnHold(ctx context.Context, run *exagentv1.AgentRun, name string) (turnHold, error) {
	conv := &exagentv1.Conversation{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: name}, conv); err != nil {
		if apierrors.IsNotFound(err) {
			return turnHold{reason: exagentv1.ReasonConversationNotFound, message: fmt.Sprintf(
				"conversation %q not found in namespace %q: the turn starts once it exists", name, run.Namespace)}, nil
		}
		return turnHold{}, fmt.Errorf("reading conversation %s: %w", name, err)
	}
	if conv.Spec.Suspend {
		return turnHold{reason: exagentv1.ReasonConversationSuspended, message: fmt.Sprintf(
			"conversation %q is suspended: the turn starts once spec.suspend is false", name)}, nil
	}
	var list exagentv1.AgentRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingFields{index.ConversationRef: name}); err != nil {
		return turnHold{}, fmt.Errorf("listing the turns of conversation %s: %w", name, err)
	}
	views := loop.TurnViews(list.Items)
	open, ahead, at := loop.TurnGate(views, run.Name)
	if open != "" {
		return turnHold{reason: exagentv1.ReasonWaitingForTurn, message: loop.TurnWaitMessage(open, ahead)}, nil
	}
	if at == 0 {
		// Not in the cache's list yet (just created): looked at again.
		return turnHold{reason: exagentv1.ReasonWaitingForTurn, message: "waiting for the conversation's turns to be listed"}, nil
	}
	for _, v := range views[:at-1] {
		if v.EndedConversation != "" {
			return turnHold{skip: true, reason: exagentv1.ReasonConversationEnded, message: fmt.Sprintf(
				"turn %s ended conversation %q (%s) before this turn started: nothing ran; start a new conversation", v.Name, name, v.EndedConversation)}, nil
		}
	}
	hold := turnHold{conv: conv, turns: views, index: at}
	if m := conv.Spec.Limits.MaxTokens; m != nil {
		left := *m - tokensBefore(list.Items, views[:at-1])
		if left <= 0 {
			return turnHold{skip: true, reason: exagentv1.ReasonLimitExceeded, message: fmt.Sprintf(
				"conversation %q used its spec.limits.maxTokens (%d) in its earlier turns: nothing ran; raise the limit or start a new conversation",
				name, *m)}, nil
		}
		hold.tokensLeft = &left
	}
	if f := conv.Spec.ForkOf; f != nil && at == 1 {
		return r.forkHold(ctx, run, conv, hold)
	}
	return hold, nil
}

// tokensBefore sums the prompt and completion tokens of the turns named by
// before.
func tokensBefore(runs []exagentv1.AgentRun, before []loop.TurnView) int64 {
	names := make(map[string]bool, len(before))
	for _, v := range before {
		names[v.Name] = true
	}
	var n int64
	for i := range runs {
		if names[runs[i].Name] {
			n += runs[i].Status.Ledger.PromptTokens + runs[i].Status.Ledger.CompletionTokens
		}
	}
	return n
}

// forkHold finds the turn a branch's first turn continues: turn
// forkOf.turn of the forked conversation, in its order. It waits while
// that turn has not ended; a conversation or turn that does not exist
// ends the branch's turn (ForkNotFound).
func (r *AgentRunReconciler) forkHold(ctx context.Context, run *exagentv1.AgentRun, conv *exagentv1.Conversation, hold turnHold) (turnHold, error) {
	f := conv.Spec.ForkOf
	var list exagentv1.AgentRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingFields{index.ConversationRef: f.Name}); err != nil {
		return turnHold{}, fmt.Errorf("listing the turns of conversation %s, which %s forks: %w", f.Name, conv.Name, err)
	}
	views := loop.TurnViews(list.Items)
	if int(f.Turn) > len(views) {
		return turnHold{skip: true, reason: exagentv1.ReasonForkNotFound, message: fmt.Sprintf(
			"conversation %q forks turn %d of conversation %q, which has %d turns: fix spec.forkOf in a new Conversation",
			conv.Name, f.Turn, f.Name, len(views))}, nil
	}
	src := views[f.Turn-1]
	if !loop.TurnEnded(src) {
		return turnHold{poll: true, reason: exagentv1.ReasonWaitingForTurn, message: fmt.Sprintf(
			"waiting for turn %s of conversation %q, which this branch forks, to end", src.Name, f.Name)}, nil
	}
	hold.fork = src.Name
	return hold, nil
}

// turnsOf wakes the turns of a conversation that may be waiting on run,
// or that a new turn interrupts: every other turn of its conversation that
// has not ended (or holds an Uncertain call), when run is a turn; every
// such turn, when a Conversation changes (it was created, unsuspended, its
// doubleText changed).
func (r *AgentRunReconciler) turnsOf(ctx context.Context, o client.Object) []reconcile.Request {
	name := ""
	switch x := o.(type) {
	case *exagentv1.AgentRun:
		if x.Spec.ConversationRef == nil {
			return nil
		}
		name = x.Spec.ConversationRef.Name
	case *exagentv1.Conversation:
		name = x.Name
	default:
		return nil
	}
	var list exagentv1.AgentRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.ConversationRef: name}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		t := &list.Items[i]
		if _, self := o.(*exagentv1.AgentRun); self && t.Name == o.GetName() {
			continue
		}
		if !loop.TurnEnded(loop.ViewOf(t.Name, t.TurnCreated(), &t.Status)) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(t)})
		}
	}
	return out
}

// turnPhaseChanged passes a turn's update that changed what the other
// turns wait for: its phase, or whether it holds an Uncertain call (a
// cancelled turn's call resolved lets the next turn go).
func turnPhaseChanged(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*exagentv1.AgentRun)
	cur, ok2 := e.ObjectNew.(*exagentv1.AgentRun)
	if !ok1 || !ok2 || cur.Spec.ConversationRef == nil {
		return false
	}
	return old.Status.Phase != cur.Status.Phase || len(old.Status.UncertainCalls()) != len(cur.Status.UncertainCalls())
}

// interruptTurn ends a turn that a newer turn of its conversation
// interrupts (doubleText Interrupt), as a cancel does (loop.Interrupt):
// a call in flight is Uncertain and the turn holds the queue until it is
// resolved. It runs before recover, so a turn another replica owns is
// interrupted too (its claim revoked by this write's compare-and-swap).
func (r *AgentRunReconciler) interruptTurn(ctx context.Context, sc *scope) error {
	ref := sc.run.Spec.ConversationRef
	if ref == nil || sc.env == nil || sc.status.Phase == "" || sc.status.Phase.IsTerminal() {
		return nil
	}
	conv := &exagentv1.Conversation{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: sc.run.Namespace, Name: ref.Name}, conv); err != nil {
		return client.IgnoreNotFound(err)
	}
	if conv.Spec.DoubleText != exagentv1.DoubleTextInterrupt {
		return nil
	}
	var list exagentv1.AgentRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(sc.run.Namespace), client.MatchingFields{index.ConversationRef: ref.Name}); err != nil {
		return fmt.Errorf("listing the turns of conversation %s: %w", ref.Name, err)
	}
	views := loop.TurnViews(list.Items)
	byName := map[string]*exagentv1.AgentRun{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	var newer *exagentv1.AgentRun
	after := false
	for _, v := range views {
		if after {
			newer = byName[v.Name] // the newest turn interrupts
		}
		if v.Name == sc.run.Name {
			after = true
		}
	}
	if newer == nil {
		return nil
	}
	actor := "an unknown requester"
	if newer.Spec.RequestedBy != nil && newer.Spec.RequestedBy.Username != "" {
		actor = newer.Spec.RequestedBy.Username
	}
	next, err := loop.Interrupt(sc.status, sc.env, newer.Name, actor, sc.now)
	if err != nil {
		return fmt.Errorf("interrupting the turn: %w", err)
	}
	sc.set(next)
	sc.note(exagentv1.EventRunFailed, warning, "%s", next.Message)
	sc.stop = true
	return nil
}
