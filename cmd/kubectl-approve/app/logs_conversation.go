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

package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// conversationLogs prints a conversation turn by turn: a header per turn
// (its run, Agent, who asked, how it stands), then what that turn said
// and did — its own messages, calls, approvals and end; the earlier turns'
// messages each turn's transcript starts with are printed once, under the
// turn that wrote them. ok is false when no Conversation has that name.
func (o *logsOptions) conversationLogs(ctx context.Context) (ok bool, err error) {
	conv := &exagentv1.Conversation{}
	if err := o.client.Get(ctx, types.NamespacedName{Namespace: o.namespace, Name: o.run}, conv); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, nil // no Conversation kind installed, or unreadable: the run's own error stands
	}
	var list exagentv1.AgentRunList
	if err := o.client.List(ctx, &list, client.InNamespace(o.namespace),
		client.MatchingLabels{exagentv1.LabelConversation: exagentv1.LabelValue(conv.Name)}); err != nil {
		return true, fmt.Errorf("listing the turns of conversation %s: %w", conv.Name, err)
	}
	turns := slices.DeleteFunc(list.Items, func(r exagentv1.AgentRun) bool {
		return r.Spec.ConversationRef == nil || r.Spec.ConversationRef.Name != conv.Name
	})
	slices.SortFunc(turns, func(a, b exagentv1.AgentRun) int {
		if c := a.TurnCreated().Compare(b.TurnCreated()); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	fmt.Fprintf(o.Out, "conversation %s: %d turns, %s\n", conv.Name, len(turns), orNone(string(conv.Status.Phase)))
	segments := newSegmentReader(o.client)
	for i := range turns {
		t := &turns[i]
		who := "unknown"
		if t.Spec.RequestedBy != nil {
			who = t.Spec.RequestedBy.Username
		}
		fmt.Fprintf(o.Out, "── turn %d: %s (agent %s, asked by %s) %s\n", i+1, t.Name, t.Spec.AgentRef.Name, who, orNone(string(t.Status.Phase)))
		j, err := readJournal(ctx, segments, t)
		if err != nil {
			return true, err
		}
		for _, e := range turnEntries(t, j) {
			if _, err := fmt.Fprintln(o.Out, e.text); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}

// turnEntries are the log lines of one turn: logEntries over its own part
// of the transcript (from status.turn.firstMessage) and its own calls.
func turnEntries(run *exagentv1.AgentRun, j *journal) []logEntry {
	st := &run.Status
	if j == nil {
		j = &journal{messages: st.History, calls: st.Calls, approvals: st.Approvals}
	}
	first := 0
	if st.Turn != nil && st.Turn.FirstMessage > 0 && int(st.Turn.FirstMessage) <= len(j.messages) {
		first = int(st.Turn.FirstMessage)
	}
	own := map[string]bool{}
	for _, c := range st.Calls {
		own[c.ID] = true
	}
	for _, m := range j.messages[first:] {
		for _, tc := range m.ToolCalls {
			own[tc.ID] = true
		}
	}
	mine := &journal{messages: j.messages[first:], approvals: j.approvals}
	for _, c := range j.calls {
		if own[c.ID] {
			mine.calls = append(mine.calls, c)
		}
	}
	return logEntries(run, mine)
}
