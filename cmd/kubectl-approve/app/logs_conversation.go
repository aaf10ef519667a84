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
	"io"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/cmd/kubectl-approve/app/turn"
)

// conversationLogs prints a conversation turn by turn (threadPrinter),
// and with -f goes on with the turns as they come (followConversation).
// ok is false when no Conversation has that name.
func (o *logsOptions) conversationLogs(ctx context.Context) (ok bool, err error) {
	conv := &exagentv1.Conversation{}
	if err := o.client.Get(ctx, types.NamespacedName{Namespace: o.namespace, Name: o.run}, conv); err != nil {
		// Not found, no Conversation kind installed, or unreadable: the
		// run's own error stands.
		return false, nil
	}
	if o.Follow {
		return true, followConversation(ctx, o.client, o.Out, o.ErrOut, conv, o.Timeout)
	}
	turns, err := turn.List(ctx, o.client, conv)
	if err != nil {
		return true, err
	}
	fmt.Fprintf(o.Out, "conversation %s: %d turns, %s\n", conv.Name, len(turns), orNone(string(conv.Status.Phase)))
	p := newThreadPrinter(o.Out, o.client, true)
	for i := range turns {
		if err := p.turn(ctx, &turns[i], true); err != nil {
			return true, err
		}
	}
	return true, nil
}

// threadPrinter prints the turns of one conversation: a header per turn
// (its number, run, Agent, who asked), then what that turn said and did
// (turnEntries). Each line is printed once, so a follower hands it every
// new version of a turn and only what is new comes out.
type threadPrinter struct {
	out      io.Writer
	segments *segmentReader
	// headers prints a header per turn (logs CONV); say --wait follows
	// its one turn without.
	headers bool
	printed map[types.UID]map[string]bool
	number  map[types.UID]int
}

func newThreadPrinter(out io.Writer, c client.Reader, headers bool) *threadPrinter {
	return &threadPrinter{out: out, segments: newSegmentReader(c), headers: headers,
		printed: map[types.UID]map[string]bool{}, number: map[types.UID]int{}}
}

// turn prints what of t was not printed yet. A turn seen for the first
// time gets the next number and its header; phase adds the turn's phase
// to the header (a one-off print: a follower's header would go stale).
func (p *threadPrinter) turn(ctx context.Context, t *exagentv1.AgentRun, phase bool) error {
	done, seen := p.printed[t.UID]
	if !seen {
		done = map[string]bool{}
		p.printed[t.UID] = done
		p.number[t.UID] = len(p.number) + 1
		if p.headers {
			line := fmt.Sprintf("── turn %d: %s (agent %s, asked by %s)", p.number[t.UID], t.Name, t.Spec.AgentRef.Name, turn.Requester(t))
			if phase {
				line += " " + orNone(string(t.Status.Phase))
			}
			if _, err := fmt.Fprintln(p.out, line); err != nil {
				return err
			}
		}
	}
	j, err := readJournal(ctx, p.segments, t)
	if err != nil {
		return err
	}
	for _, e := range turnEntries(t, j) {
		if done[e.key] {
			continue
		}
		done[e.key] = true
		if _, err := fmt.Fprintln(p.out, e.text); err != nil {
			return err
		}
	}
	return nil
}

// waiting prints, once per wait, what t waits for — a person (the
// commands that move it on), or an earlier turn — and reports whether it
// waits for a person.
func (p *threadPrinter) waiting(t *exagentv1.AgentRun) (bool, error) {
	line, person := waitingFor(t), true
	if line == "" {
		person = false
		if st := &t.Status; st.Phase == exagentv1.PhaseQueued && st.Message != "" &&
			(st.Reason == exagentv1.ReasonWaitingForTurn || st.Reason == exagentv1.ReasonConversationSuspended) {
			line = "queued: " + st.Message
		}
	}
	if line == "" || p.printed[t.UID]["wait/"+line] {
		return person, nil
	}
	if p.printed[t.UID] == nil {
		p.printed[t.UID] = map[string]bool{}
	}
	p.printed[t.UID]["wait/"+line] = true
	_, err := fmt.Fprintln(p.out, line)
	return person, err
}

// turnEntries are the log lines of one turn: what its requester said
// (spec.input), then logEntries over its own part of the transcript —
// after its own user message (status.turn.firstMessage), which is that
// input and is not printed twice — and its own calls. A turn that has
// not started has no messages of its own yet: the history it holds
// before it starts is replaced when it continues the conversation.
func turnEntries(run *exagentv1.AgentRun, j *journal) []logEntry {
	st := &run.Status
	if j == nil {
		j = &journal{messages: st.History, calls: st.Calls, approvals: st.Approvals}
	}
	first := 0
	if st.Turn != nil && st.Turn.FirstMessage > 0 && int(st.Turn.FirstMessage) <= len(j.messages) {
		first = int(st.Turn.FirstMessage)
	}
	if st.Turn == nil && run.Spec.ConversationRef != nil {
		first = len(j.messages)
	}
	msgs := j.messages[first:]
	// The turn's first user message is its input, printed from the spec
	// (before the turn starts too); what precedes it in the turn's part —
	// the first turn's starts with the Agent's instructions — is not
	// what anyone said in the conversation. A person's turn has no input
	// message: its first is what its people answered.
	for i := range msgs {
		if st.Turn != nil && st.Turn.Human {
			break
		}
		if msgs[i].Role == exagentv1.RoleUser {
			msgs = msgs[i+1:]
			break
		}
	}
	own := map[string]bool{}
	for _, c := range st.Calls {
		own[c.ID] = true
	}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			own[tc.ID] = true
		}
	}
	mine := &journal{messages: msgs, approvals: j.approvals}
	for _, c := range j.calls {
		if own[c.ID] {
			mine.calls = append(mine.calls, c)
		}
	}
	out := []logEntry{{key: "input", text: truncate(oneLine("[user] "+run.Spec.Input), logWidth)}}
	return append(out, logEntries(run, mine)...)
}
