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

package turn

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Of selects the turns of the conversation named conv: the label
// admission stamps on every turn (a run's own label is overwritten, so it
// cannot claim another conversation). The exact name is checked after
// the list (Sorted), as a long name's label value is a hash.
func Of(conv string) client.MatchingLabels {
	return client.MatchingLabels{exagentv1.LabelConversation: exagentv1.LabelValue(conv)}
}

// List returns the turns of conv in their order (Sorted).
func List(ctx context.Context, c client.Reader, conv *exagentv1.Conversation) ([]exagentv1.AgentRun, error) {
	var list exagentv1.AgentRunList
	if err := c.List(ctx, &list, client.InNamespace(conv.Namespace), Of(conv.Name)); err != nil {
		return nil, fmt.Errorf("listing the turns of conversation %s: %w", conv.Name, err)
	}
	return Sorted(conv.Name, list.Items), nil
}

// Sorted keeps the runs of runs that are turns of conv and orders them
// as the manager does: by the instant admission stamped on each, then
// name — set once, so every reader computes the same order.
func Sorted(conv string, runs []exagentv1.AgentRun) []exagentv1.AgentRun {
	runs = slices.DeleteFunc(runs, func(r exagentv1.AgentRun) bool {
		return r.Spec.ConversationRef == nil || r.Spec.ConversationRef.Name != conv
	})
	sort.SliceStable(runs, func(i, j int) bool { return Compare(&runs[i], &runs[j]) < 0 })
	return runs
}

// Compare orders two turns of one conversation.
func Compare(a, b *exagentv1.AgentRun) int {
	if c := a.TurnCreated().Compare(b.TurnCreated()); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Requester is who asked for run ("unknown" for a run admission never
// stamped).
func Requester(run *exagentv1.AgentRun) string {
	if run.Spec.RequestedBy != nil && run.Spec.RequestedBy.Username != "" {
		return run.Spec.RequestedBy.Username
	}
	return "unknown"
}
