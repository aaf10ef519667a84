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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/index"
	"github.com/exagent-io/exagent/loop"
)

// +kubebuilder:rbac:groups=exagent.io,resources=conversations,verbs=get;list;watch

// waitTurn keeps a turn of a conversation Queued — no claim, no model
// request, no IO — while its conversation holds it: an earlier turn is
// open (loop.TurnGate), the Conversation does not exist, or it is
// suspended. A turn past its first claim is never held again.
func (r *AgentRunReconciler) waitTurn(ctx context.Context, sc *scope) error {
	ref := sc.run.Spec.ConversationRef
	if ref == nil || sc.fence != nil || sc.status.Phase != exagentv1.PhaseQueued || sc.noIO {
		return nil
	}
	reason, message, err := r.turnHold(ctx, sc.run, ref.Name)
	if err != nil || reason == "" {
		return err
	}
	if sc.status.Reason != reason || sc.status.Message != message {
		next, err := loop.WaitForTurn(sc.status, reason, message)
		if err != nil {
			return fmt.Errorf("holding the turn: %w", err)
		}
		sc.set(next)
	}
	sc.stop = true // woken when an earlier turn changes (turnsAfter) or the Conversation does
	return nil
}

// turnHold says why run, a turn of conversation name, may not start yet
// ("" when it may).
func (r *AgentRunReconciler) turnHold(ctx context.Context, run *exagentv1.AgentRun, name string) (reason, message string, err error) {
	conv := &exagentv1.Conversation{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: name}, conv); err != nil {
		if apierrors.IsNotFound(err) {
			return exagentv1.ReasonConversationNotFound, fmt.Sprintf(
				"conversation %q not found in namespace %q: the turn starts once it exists", name, run.Namespace), nil
		}
		return "", "", fmt.Errorf("reading conversation %s: %w", name, err)
	}
	if conv.Spec.Suspend {
		return exagentv1.ReasonConversationSuspended, fmt.Sprintf(
			"conversation %q is suspended: the turn starts once spec.suspend is false", name), nil
	}
	var list exagentv1.AgentRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingFields{index.ConversationRef: name}); err != nil {
		return "", "", fmt.Errorf("listing the turns of conversation %s: %w", name, err)
	}
	views := make([]loop.TurnView, 0, len(list.Items))
	for i := range list.Items {
		t := &list.Items[i]
		views = append(views, loop.TurnView{Name: t.Name, Created: t.CreationTimestamp.Time, Phase: t.Status.Phase})
	}
	if open, ahead, _ := loop.TurnGate(views, run.Name); open != "" {
		return exagentv1.ReasonWaitingForTurn, loop.TurnWaitMessage(open, ahead), nil
	}
	return "", "", nil
}

// turnsOf wakes the turns of a conversation that may be waiting on run:
// every other turn of its conversation, when run is a turn (a turn's end
// lets the next one go); every turn, when a Conversation changes (it was
// created, or unsuspended).
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
		if t.Name == o.GetName() && t.Namespace == o.GetNamespace() {
			if _, self := o.(*exagentv1.AgentRun); self {
				continue
			}
		}
		if t.Status.Phase == exagentv1.PhaseQueued || t.Status.Phase == "" {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(t)})
		}
	}
	return out
}

// turnPhaseChanged passes a turn's update that changed its phase: only an
// end (or a start) can change what the other turns wait for.
func turnPhaseChanged(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*exagentv1.AgentRun)
	cur, ok2 := e.ObjectNew.(*exagentv1.AgentRun)
	return ok1 && ok2 && cur.Spec.ConversationRef != nil && old.Status.Phase != cur.Status.Phase
}
