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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Retention of whole conversations (docs/retention.md, Conversations): a
// turn is never reaped on its own — later turns continue its transcript
// and share its segments — so a conversation is the unit. These
// functions decide, over data, with now passed in; the reaper reads the
// Conversation and its turns, archives each turn and deletes the
// Conversation (the garbage collector takes its turns).

// TTLFromConversation is where a conversation's own TTL comes from.
const TTLFromConversation TTLSource = "the conversation's spec.retention.ttl"

// ResolveConversationRetention is the retention of a conversation: its
// own spec.retention.ttl, else its agentRef Agent's
// retention.ttlSecondsAfterFinished, else the manager's default (0: none);
// that Agent's keepLast (which counts the Agent's conversations apart
// from its runs) and archive. agent is nil when the Agent is gone: the
// conversation keeps its own TTL or the manager's, and has no archive.
func ResolveConversationRetention(conv *exagentv1.ConversationRetention, agent *exagentv1.RetentionSpec, managerTTL time.Duration) Retention {
	r := ResolveRetention(&exagentv1.AgentRunSpec{}, agent, managerTTL)
	if conv != nil && conv.TTL != nil {
		d := max(conv.TTL.Duration, 0)
		r.TTL, r.TTLSource = &d, TTLFromConversation
	}
	return r
}

// ConversationTurn is what retention reads of one turn, read past the
// cache.
type ConversationTurn struct {
	Name    string
	Created time.Time // exagent.io/turn-created, else creation
	Status  *Status
	// Running says this process still has IO of the turn in flight, or
	// results of it not yet journaled (as for Reapable).
	Running bool
	// GitOps names the GitOps tool that manages the turn ("" when none;
	// GitOpsManager).
	GitOps string
}

// ConversationState is what retention reads of a conversation.
type ConversationState struct {
	// Open is status.open: the turn that holds the queue, as the
	// conversation controller last saw it.
	Open string
	// LastTurnEndedAt is status.lastTurnEndedAt (zero: none recorded).
	LastTurnEndedAt time.Time
	// GitOps names the GitOps tool that manages the Conversation ("" when none).
	GitOps string
	// ForkedBy names a Conversation that forks this one (spec.forkOf; ""
	// when none): its turns continue this one's segments by reference.
	ForkedBy string
	// Turns are its turns, in any order.
	Turns []ConversationTurn
}

// ConversationDecision is whether retention deletes a conversation now.
type ConversationDecision struct {
	// Reap: archive every turn (when there is a sink) and delete it.
	Reap bool
	// Why it is kept (empty when Reap).
	Why string
	// Until is when to look again; zero: a write (a turn's end, a
	// journal, the conversation's status) brings it back.
	Until time.Time
	// GitOps: it is kept because a GitOps tool manages it or one of its
	// turns (said in a Warning Event).
	GitOps bool
}

// ConversationReapable decides whether retention deletes a conversation
// now, with every turn: byKeepLast when its Agent's keepLast lets it go
// (KeepLastConversations), else when its TTL has passed since its newest
// turn ended. Never a conversation without a turn (nothing to count from;
// it was made for turns still to come), nor one with a turn that has not
// ended — status.open set, a turn not in a terminal phase, or one that
// holds a call Uncertain (it holds the queue until a person resolves it,
// TurnEnded) — nor one that another conversation forks (the fork's turns
// read this one's segments; deleting the fork lets it go), nor one that a
// GitOps tool manages, or one of whose turns it manages (the next sync
// re-creates what is deleted: a turn under a new UID runs its tool calls
// again), and only once each turn is Reapable (its notifications settled,
// no call that may still report).
func ConversationReapable(c ConversationState, r Retention, byKeepLast bool, now time.Time, lateWindow time.Duration) ConversationDecision {
	if len(c.Turns) == 0 {
		return ConversationDecision{Why: "the conversation has no turn"}
	}
	if c.Open != "" {
		return ConversationDecision{Why: fmt.Sprintf("turn %s is open", c.Open)}
	}
	last := c.LastTurnEndedAt
	for i := range c.Turns {
		t := &c.Turns[i]
		if v := ViewOf(t.Name, t.Created, t.Status); !TurnEnded(v) {
			if v.Phase.IsTerminal() {
				return ConversationDecision{Why: fmt.Sprintf("turn %s holds a call whose outcome is unknown: resolve it (kubectl approve resolve)", t.Name)}
			}
			return ConversationDecision{Why: fmt.Sprintf("turn %s is %s, not ended", t.Name, t.Status.Phase)}
		}
		if ended, ok := EndedAt(t.Status, t.Created); ok && ended.After(last) {
			last = ended
		}
	}
	if !byKeepLast {
		if r.TTL == nil {
			return ConversationDecision{Why: "the conversation has no TTL"}
		}
		if at := last.Add(*r.TTL); now.Before(at) {
			return ConversationDecision{Why: fmt.Sprintf("its TTL (from %s) passes at %s", r.TTLSource, at.UTC().Format(time.RFC3339)), Until: at}
		}
	}
	if c.ForkedBy != "" {
		return ConversationDecision{Why: fmt.Sprintf("conversation %s forks it: its turns continue this one's segments, kept while it exists", c.ForkedBy)}
	}
	if why, ok := keptConversationFromGitOps(c, r, byKeepLast); ok {
		return ConversationDecision{Why: why, GitOps: true}
	}
	for i := range c.Turns {
		t := &c.Turns[i]
		if ok, why, until := Reapable(t.Status, now, lateWindow, t.Running); !ok {
			return ConversationDecision{Why: fmt.Sprintf("turn %s: %s", t.Name, why), Until: until}
		}
	}
	return ConversationDecision{Reap: true}
}

// keptConversationFromGitOps says why retention leaves a due conversation
// alone when a GitOps tool manages it or one of its turns.
func keptConversationFromGitOps(c ConversationState, r Retention, byKeepLast bool) (string, bool) {
	what, tool := "", c.GitOps
	if tool != "" {
		what = "the conversation"
	}
	for i := range c.Turns {
		if tool == "" && c.Turns[i].GitOps != "" {
			what, tool = "its turn "+c.Turns[i].Name, c.Turns[i].GitOps
		}
	}
	if tool == "" {
		return "", false
	}
	by := "its TTL comes from " + string(r.TTLSource)
	if byKeepLast {
		by = "its Agent's retention.keepLast would let it go"
	}
	return fmt.Sprintf("retention does not delete this conversation: %s manages %s and would re-create what is deleted, "+
		"a turn under a new UID running every tool call again; %s. Remove it from the GitOps source to delete it "+
		"(docs/gitops.md, Retention)", tool, what, by), true
}

// IdleConversation is when a conversation went idle, from its status:
// when its newest turn ended, with no turn open. ok is false for a
// conversation with a turn open or none ended (never counted by keepLast).
func IdleConversation(s *exagentv1.ConversationStatus) (time.Time, bool) {
	if s.Open != "" || s.LastTurnEndedAt == nil || len(s.Turns) == 0 {
		return time.Time{}, false
	}
	return s.LastTurnEndedAt.Time, true
}

// IdleConv is what keepLast reads of one idle conversation.
type IdleConv struct {
	Name  string
	Since time.Time // IdleConversation
}

// KeepLastConversations returns the indexes (into convs) of the idle
// conversations beyond an Agent's keepLast newest — newest by when their
// last turn ended, then by name. A conversation counts as one, beside the
// Agent's runs (BeyondKeepLast counts those apart): its turns never count.
func KeepLastConversations(convs []IdleConv, keep int) []int {
	ended := make([]EndedRun, len(convs))
	for i, c := range convs {
		ended[i] = EndedRun{Name: c.Name, Ended: c.Since}
	}
	return BeyondKeepLast(ended, keep)
}

// TurnArchive is what a turn's archive says of its conversation: the
// archive of a conversation is one record per turn, and turns tells a
// receiver how many records make the whole.
type TurnArchive struct {
	Conversation, ConversationUID string
	// Turn is the turn's place among the conversation's turns (from 1, in
	// the conversation's order, as status.turns numbers them), Turns how
	// many there are.
	Turn, Turns int
}

// TurnArchiveDigest is what a turn's archive covers: the run's
// ArchiveDigest and its place in the conversation. A turn whose
// conversation gained or lost a turn since it was archived is archived
// again (with a new id) before it is deleted, so the last record a sink
// has of each turn counts the turns deleted with it.
func TurnArchiveDigest(runDigest string, t TurnArchive) string {
	sum := sha256.Sum256([]byte(runDigest + "\x00" + t.Conversation + "\x00" + t.ConversationUID + "\x00" +
		strconv.Itoa(t.Turn) + "\x00" + strconv.Itoa(t.Turns)))
	return "sha256:" + hex.EncodeToString(sum[:])
}
