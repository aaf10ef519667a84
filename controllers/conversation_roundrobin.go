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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// +kubebuilder:rbac:groups=exagent.io,resources=agentruns,verbs=create

// A RoundRobin conversation's next turn is the controller's to create
// (DESIGN §18): once the newest turn Succeeded and none is open, the next
// participant in spec.participants order takes turn N, an AgentRun named
// CONV-tN — deterministic, so a crash, a stale cache or a second replica
// never makes two (the second Create is AlreadyExists). It carries the
// requester of the conversation's first turn (a person started the
// session; admission checks the copy). It stops at maxTurns (which
// RoundRobin requires), when a participant ended the conversation, while
// suspended, and after a turn that did not succeed (a person says how to
// go on: kubectl approve say).

// nextTurn creates the RoundRobin conversation's next turn when it is due.
func (r *ConversationReconciler) nextTurn(ctx context.Context, conv *exagentv1.Conversation, runs []exagentv1.AgentRun, v loop.ConversationView) error {
	if conv.Spec.TurnPolicy != exagentv1.TurnRoundRobin || v.Phase != exagentv1.ConversationIdle || len(runs) == 0 {
		return nil
	}
	if m := conv.Spec.Limits.MaxTurns; m == nil || int32(len(runs)) >= *m {
		return nil
	}
	byName := make(map[string]*exagentv1.AgentRun, len(runs))
	for i := range runs {
		byName[runs[i].Name] = &runs[i]
	}
	views := loop.TurnViews(runs)
	last, first := byName[views[len(views)-1].Name], byName[views[0].Name]
	if last.Status.Phase != exagentv1.PhaseSucceeded || first.Spec.RequestedBy == nil {
		return nil
	}
	p := nextParticipant(conv, last)
	n := len(runs) + 1
	agent := conv.Spec.AgentRef.Name
	if p.AgentRef != nil {
		agent = p.AgentRef.Name
	}
	turn := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: conv.Namespace, Name: fmt.Sprintf("%s-t%d", conv.Name, n)},
		Spec: exagentv1.AgentRunSpec{
			AgentRef:        exagentv1.LocalObjectReference{Name: agent},
			Input:           fmt.Sprintf("It is your turn, %s (turn %d of at most %d): continue the conversation.", p.Name, n, *conv.Spec.Limits.MaxTurns),
			ConversationRef: &exagentv1.ConversationRef{Name: conv.Name, Participant: p.Name},
			RequestedBy:     first.Spec.RequestedBy.DeepCopy(),
		},
	}
	if err := r.Client.Create(ctx, turn); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating turn %d (%s) of RoundRobin conversation %s/%s: %w", n, turn.Name, conv.Namespace, conv.Name, err)
	}
	return nil
}

// nextParticipant is the participant after the one that took turn last,
// in spec.participants order (the conversation's agentRef stands alone
// when it lists none).
func nextParticipant(conv *exagentv1.Conversation, last *exagentv1.AgentRun) exagentv1.Participant {
	ps := conv.Spec.Participants
	if len(ps) == 0 {
		return exagentv1.Participant{Name: conv.Spec.AgentRef.Name, AgentRef: &conv.Spec.AgentRef}
	}
	took := last.Spec.AgentRef.Name
	if last.Spec.ConversationRef != nil && last.Spec.ConversationRef.Participant != "" {
		took = last.Spec.ConversationRef.Participant
	}
	at := -1
	for i, p := range ps {
		if p.Name == took {
			at = i
			break
		}
	}
	if at < 0 {
		for i, p := range ps {
			if p.AgentRef != nil && p.AgentRef.Name == took {
				at = i
				break
			}
		}
	}
	return ps[(at+1)%len(ps)]
}
