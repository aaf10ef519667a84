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

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/index"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/loop"
)

// +kubebuilder:rbac:groups=exagent.io,resources=conversations/status,verbs=get;update

// ConversationReconciler writes what a Conversation's turns say of it:
// its phase, its turns in order, the turn that holds the queue and how
// many wait behind it, the ledger summed over its turns, conditions Ready
// and Ended. Information only: the turns hold themselves (waitTurn).
type ConversationReconciler struct {
	// Owner says which of these objects this manager writes (shards.go).
	Owner  Ownership
	Client client.Client
	// Clock stamps the conditions (the real clock when nil).
	Clock clock.PassiveClock
	// Name of the controller (distinct per manager in tests that run several).
	Name string
}

// SetupWithManager registers the controller: a Conversation's spec, and
// any change of one of its turns, wake it.
func (r *ConversationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Name == "" {
		r.Name = "conversation"
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Name).
		For(&exagentv1.Conversation{}).
		Watches(&exagentv1.AgentRun{}, handler.EnqueueRequestsFromMapFunc(conversationOfTurn)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(quietConflicts{controller: r.Name, next: ownedOnly(r.Owner, shard.ConversationKey, r)})
}

// conversationOfTurn maps a turn to its Conversation.
func conversationOfTurn(_ context.Context, o client.Object) []reconcile.Request {
	run, ok := o.(*exagentv1.AgentRun)
	if !ok || run.Spec.ConversationRef == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.ConversationRef.Name}}}
}

// Reconcile writes the Conversation's status when its turns changed it
// (compare-and-swap on the version read; a conflict is looked at again).
func (r *ConversationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	conv := &exagentv1.Conversation{}
	if err := r.Client.Get(ctx, req.NamespacedName, conv); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var list exagentv1.AgentRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(conv.Namespace), client.MatchingFields{index.ConversationRef: conv.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the turns of conversation %s: %w", req.NamespacedName, err)
	}
	next, view := r.status(conv, list.Items)
	if err := r.nextTurn(ctx, conv, list.Items, view); err != nil { // conversation_roundrobin.go
		return ctrl.Result{}, err
	}
	if equality.Semantic.DeepEqual(next, conv.Status) {
		return ctrl.Result{}, nil
	}
	conv.Status = next
	if err := r.Client.Status().Update(ctx, conv); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing the status of conversation %s: %w", req.NamespacedName, err)
	}
	return ctrl.Result{}, nil
}

// status is the Conversation's status from its turns.
func (r *ConversationReconciler) status(conv *exagentv1.Conversation, runs []exagentv1.AgentRun) (exagentv1.ConversationStatus, loop.ConversationView) {
	views := loop.TurnViews(runs)
	byName := make(map[string]*exagentv1.AgentRun, len(runs))
	var ledger exagentv1.Ledger
	for i := range runs {
		byName[runs[i].Name] = &runs[i]
		addLedger(&ledger, &runs[i].Status.Ledger)
	}
	var maxTurns int32
	if m := conv.Spec.Limits.MaxTurns; m != nil {
		maxTurns = *m
	}
	v := loop.ViewConversation(views, conv.Spec.Suspend, maxTurns)
	if len(views) > exagentv1.MaxListedTurns {
		views = views[len(views)-exagentv1.MaxListedTurns:]
	}
	first := len(runs) - len(views) + 1
	turns := make([]exagentv1.Turn, 0, len(views))
	for i, tv := range views {
		turns = append(turns, exagentv1.Turn{Index: int32(first + i), Run: tv.Name,
			Participant: participantName(byName[tv.Name]), Phase: tv.Phase})
	}
	next := exagentv1.ConversationStatus{
		ObservedGeneration: conv.Generation, Phase: v.Phase, Turns: turns, TurnCount: int32(len(runs)), Open: v.Open, Queued: v.Queued, Ledger: ledger,
		Conditions: append([]metav1.Condition(nil), conv.Status.Conditions...),
	}
	if !v.LastEnded.IsZero() {
		t := metav1.NewTime(v.LastEnded)
		next.LastTurnEndedAt = &t
	}
	now := metav1.NewTime(r.Clock.Now())
	ready := metav1.ConditionTrue
	if v.Phase == exagentv1.ConversationEnded {
		ready = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: exagentv1.ConditionReady, Status: ready, Reason: v.Reason,
		Message: v.Message, ObservedGeneration: conv.Generation, LastTransitionTime: now})
	ended := metav1.ConditionFalse
	if v.Phase == exagentv1.ConversationEnded {
		ended = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: exagentv1.ConditionEnded, Status: ended, Reason: v.Reason,
		Message: v.Message, ObservedGeneration: conv.Generation, LastTransitionTime: now})
	return next, v
}

// participantName is who took a turn: its participant, else its Agent.
func participantName(run *exagentv1.AgentRun) string {
	if run.Spec.ConversationRef != nil && run.Spec.ConversationRef.Participant != "" {
		return run.Spec.ConversationRef.Participant
	}
	return run.Spec.AgentRef.Name
}

// addLedger adds a turn's ledger to a conversation's.
func addLedger(sum, l *exagentv1.Ledger) {
	sum.Requests += l.Requests
	sum.ToolCalls += l.ToolCalls
	sum.PromptTokens += l.PromptTokens
	sum.CompletionTokens += l.CompletionTokens
	sum.CacheCreationTokens += l.CacheCreationTokens
	sum.CacheReadTokens += l.CacheReadTokens
	sum.Runs += l.Runs
}
