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

// Package index owns the field indexes of the manager's cache, shared by
// the reconcilers and the background tasks (retention): a name each, set
// once at setup, listed with client.MatchingFields.
package index

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// AgentRef indexes AgentRuns by spec.agentRef.name: a changed Agent wakes
// its runs, and retention lists an Agent's runs for its keepLast.
const AgentRef = "spec.agentRef.name"

// RunRef indexes ApprovalDecisions by spec.runRef.name: a run's decisions
// are listed from the cache.
const RunRef = "spec.runRef.name"

// ConversationRef indexes AgentRuns by spec.conversationRef.name: a
// conversation's turns are listed from the cache (empty for other runs).
const ConversationRef = "spec.conversationRef.name"

// ConversationAgentRef indexes Conversations by spec.agentRef.name:
// retention lists an Agent's conversations for its keepLast, and a
// changed Agent wakes them.
const ConversationAgentRef = "spec.agentRef.name"

// Waiting indexes AgentRuns in phase Waiting (value WaitingValue; other
// runs are not indexed): the manager's cap on waiting runs per namespace
// counts them from the cache without reading the others.
const Waiting = "status.phase.waiting"

// WaitingValue is Waiting's value for a Waiting run.
const WaitingValue = "true"

// Runs sets up AgentRef, ConversationRef and Waiting.
func Runs(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &exagentv1.AgentRun{}, AgentRef, func(o client.Object) []string {
		return []string{o.(*exagentv1.AgentRun).Spec.AgentRef.Name}
	}); err != nil {
		return fmt.Errorf("indexing AgentRuns by agentRef: %w", err)
	}
	if err := idx.IndexField(ctx, &exagentv1.AgentRun{}, ConversationRef, func(o client.Object) []string {
		if ref := o.(*exagentv1.AgentRun).Spec.ConversationRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing AgentRuns by conversationRef: %w", err)
	}
	if err := idx.IndexField(ctx, &exagentv1.AgentRun{}, Waiting, func(o client.Object) []string {
		if o.(*exagentv1.AgentRun).Status.Phase == exagentv1.PhaseWaiting {
			return []string{WaitingValue}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing AgentRuns in phase Waiting: %w", err)
	}
	return nil
}

// Decisions sets up RunRef.
func Decisions(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &exagentv1.ApprovalDecision{}, RunRef, func(o client.Object) []string {
		return []string{o.(*exagentv1.ApprovalDecision).Spec.RunRef.Name}
	}); err != nil {
		return fmt.Errorf("indexing ApprovalDecisions by runRef: %w", err)
	}
	return nil
}

// Conversations sets up ConversationAgentRef.
func Conversations(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &exagentv1.Conversation{}, ConversationAgentRef, func(o client.Object) []string {
		return []string{o.(*exagentv1.Conversation).Spec.AgentRef.Name}
	}); err != nil {
		return fmt.Errorf("indexing Conversations by agentRef: %w", err)
	}
	return nil
}
