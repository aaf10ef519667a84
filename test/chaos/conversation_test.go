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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// The conversation check is judged on a hand-made history of two turns:
// as recorded it passes, and each fault is caught by the rule it breaks.

// convHistory is conversation "c" of two turns, each claimed, calling
// its tool once and Succeeded — turn 2 claimed after turn 1 ended — and
// its requests: per turn a model request, the call, a model request.
type convHistory struct {
	convs Conversations
	runs  map[types.UID][]Version
	reqs  []Request
}

func newConvHistory() *convHistory {
	h := &convHistory{convs: Conversations{}, runs: map[types.UID][]Version{}}
	for k, name := range []string{"c-t1", "c-t2"} {
		h.convs["c"] = append(h.convs["c"], ConvTurn{Name: name, Input: RunInputPrefix + "ns/" + name,
			CallID: turnCallID(k + 1), Answer: turnAnswer(name)})
	}
	// rv 10..13: turn 1 queued, claimed, running, Succeeded; turn 2 queued
	// at rv 11, claimed at rv 14 (after turn 1 ended at 13), Succeeded at 15.
	h.version("c-t1", 10, exagentv1.PhaseQueued, 0, nil)
	h.version("c-t2", 11, exagentv1.PhaseQueued, 0, nil)
	h.version("c-t1", 12, exagentv1.PhaseRunning, 1, &exagentv1.TurnStatus{Index: 1})
	h.version("c-t1", 13, exagentv1.PhaseSucceeded, 1, &exagentv1.TurnStatus{Index: 1})
	h.version("c-t2", 14, exagentv1.PhaseRunning, 1, &exagentv1.TurnStatus{Index: 2, After: "c-t1"})
	h.version("c-t2", 15, exagentv1.PhaseSucceeded, 1, &exagentv1.TurnStatus{Index: 2, After: "c-t1"})

	sys := ChatMessage{Role: "system", Content: "You are the fault suite's agent."}
	var said []ChatMessage
	ms := 0
	for _, t := range h.convs["c"] {
		own := append(append([]ChatMessage{sys}, said...), ChatMessage{Role: "user", Content: t.Input})
		call := ChatMessage{Role: "assistant", ToolCalls: []string{t.CallID}}
		result := ChatMessage{Role: "tool", ToolCallID: t.CallID, Content: `{"ok":true}`}
		run := types.NamespacedName{Namespace: "ns", Name: t.Name}
		ms += 100
		h.reqs = append(h.reqs, Request{Kind: KindModel, Run: run, At: at(ms), Messages: own})
		ms += 100
		h.reqs = append(h.reqs, Request{Kind: KindHTTP, Run: run, CallID: t.CallID, Key: t.Name + "/" + t.CallID, Applied: true, At: at(ms)})
		ms += 100
		h.reqs = append(h.reqs, Request{Kind: KindModel, Run: run, Step: 1, At: at(ms), Messages: append(append([]ChatMessage(nil), own...), call, result)})
		said = append(said, own[len(own)-1], call, result, ChatMessage{Role: "assistant", Content: t.Answer})
	}
	return h
}

func (h *convHistory) version(name string, rv int64, phase exagentv1.RunPhase, attempts int64, turn *exagentv1.TurnStatus) {
	uid := types.UID("uid-" + name)
	run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid},
		Status: exagentv1.AgentRunStatus{Phase: phase, Attempts: attempts, Turn: turn}}
	h.runs[uid] = append(h.runs[uid], Version{RV: rv, Seen: at(int(rv)), Run: run})
}

func (h *convHistory) check() ([]Violation, ConvStats) {
	return CheckConversations(History{Runs: h.runs, Requests: h.reqs}, h.convs)
}

func TestCheckConversations(t *testing.T) {
	good := newConvHistory()
	if vs, st := good.check(); len(vs) != 0 || st.Turns != 2 || st.Succeeded != 2 || st.Effects != 2 || st.HistoryChecked != 2 {
		t.Fatalf("a good history: %v, %+v; want no violation, 2 turns Succeeded, 2 effects, 2 requests checked", vs, st)
	}

	cases := []struct {
		name, rule, detail string
		spoil              func(h *convHistory)
	}{
		{"a turn claimed before the one before ended", RuleTurnOrder, "before turn c-t1 ended", func(h *convHistory) {
			h.runs["uid-c-t2"][1].RV = 12 // claimed at rv 12, turn 1 ended at 13
		}},
		{"a turn that names the wrong turn before it", RuleTurnOrder, "want index 2 after c-t1", func(h *convHistory) {
			h.runs["uid-c-t2"][1].Run.Status.Turn = &exagentv1.TurnStatus{Index: 1}
		}},
		{"a turn's request before the last of the turn before", RuleTurnOrder, "before the last request of turn c-t1", func(h *convHistory) {
			h.reqs[3].At = at(250) // turn 2's first model request, between turn 1's call and its last model request
		}},
		{"an effect applied twice", RuleTurnEffects, "want exactly 1", func(h *convHistory) {
			h.reqs = append(h.reqs, h.reqs[4])
		}},
		{"an effect lost", RuleTurnEffects, "with 0 effects", func(h *convHistory) {
			h.reqs[1].Applied = false
		}},
		{"a turn that ended Failed", RuleTurnLost, "want Succeeded", func(h *convHistory) {
			h.runs["uid-c-t2"][2].Run.Status.Phase = exagentv1.PhaseFailed
		}},
		{"a turn never recorded", RuleTurnLost, "never saw", func(h *convHistory) {
			delete(h.runs, "uid-c-t2")
		}},
		{"a turn's request without the earlier turn's result", RuleTurnHistory, "want the result of call pay-t1", func(h *convHistory) {
			m := h.reqs[3].Messages
			h.reqs[3].Messages = append(append([]ChatMessage(nil), m[:3]...), m[4:]...)
		}},
		{"a turn's request without the earlier turn's answer", RuleTurnHistory, "answer", func(h *convHistory) {
			m := h.reqs[5].Messages
			h.reqs[5].Messages = append(append([]ChatMessage(nil), m[:4]...), m[5:]...)
		}},
		{"a turn's request that starts afresh", RuleTurnHistory, "want turn c-t1's input", func(h *convHistory) {
			m := h.reqs[3].Messages
			h.reqs[3].Messages = []ChatMessage{m[0], m[len(m)-1]}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newConvHistory()
			c.spoil(h)
			vs, _ := h.check()
			found := false
			for _, v := range vs {
				if v.Rule == c.rule && strings.Contains(v.Detail, c.detail) {
					found = true
				}
			}
			if !found {
				t.Errorf("violations %v, want %s (%q)", vs, c.rule, c.detail)
			}
		})
	}

	// A turn whose model requests were lost past the bound is accepted, and
	// the next turn carries at least its input.
	h := newConvHistory()
	st := &h.runs["uid-c-t1"][2].Run.Status
	st.Phase, st.Reason = exagentv1.PhaseFailed, exagentv1.ReasonModelRequestRetriesExhausted
	h.reqs = append(h.reqs[:1], h.reqs[3:]...) // turn 1 made no call and gave no answer
	h.reqs[0].At, h.reqs[1].At = at(1), at(2)
	for i := 1; i < len(h.reqs); i++ {
		if h.reqs[i].Kind == KindModel {
			m := h.reqs[i].Messages
			h.reqs[i].Messages = append([]ChatMessage{m[0], m[1]}, m[5:]...) // system, turn 1's input, then turn 2's
		}
	}
	if vs, st := h.check(); len(vs) != 0 || st.Exhausted != 1 || st.Succeeded != 1 {
		t.Errorf("a turn ended ModelRequestRetriesExhausted: %v, %+v; want it accepted", vs, st)
	}
}
