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
	"fmt"
	"sort"
	"strings"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Rules of the conversation check (CheckConversations); every Violation
// names one.
const (
	RuleTurnLost    = "turn-lost"
	RuleTurnEffects = "turn-effect-not-once"
	RuleTurnOrder   = "turn-out-of-order"
	RuleTurnHistory = "turn-history-missing"
	// RuleConvStatus: a Conversation's status did not come to list its
	// turns as they ended (the scenario checks it on the live cluster).
	RuleConvStatus = "conversation-status-wrong"
)

// ConvTurn is one turn of a conversation as a scenario scripted it: its
// run, its input, the one tool call its model asks for at its first step
// and the final answer at its second.
type ConvTurn struct {
	Name, Input, CallID, Answer string
}

// Conversations are a scenario's conversations, each with its turns in
// the order they were said.
type Conversations map[string][]ConvTurn

// ConvStats are what CheckConversations counted.
type ConvStats struct {
	Turns, Succeeded int
	// Exhausted turns ended Failed, ModelRequestRetriesExhausted: their
	// model request was lost more often than a step may pay for.
	Exhausted int
	// Effects are the tool effects the turns applied.
	Effects int
	// HistoryChecked are the model requests of later turns whose
	// messages were held against the earlier turns'.
	HistoryChecked int
}

// CheckConversations judges the turns of conversations in a recorded
// history:
//
//   - no turn lost: every turn was recorded and ended Succeeded, or Failed
//     with ModelRequestRetriesExhausted (R2's accepted end); a turn that
//     never ended is the history check's run-not-terminal;
//   - each turn's effect once: a Succeeded turn's tool applied exactly one
//     effect, of its own call (an exhausted one at most one);
//   - turns in order: a turn was continued and claimed (status.turn, its
//     first attempt) only after the turn before it ended — in the store's
//     order, resourceVersions — naming that turn and its own index, and
//     its first request (model or tool) arrived after the last request of
//     the turn before;
//   - history carried: every model request of turn N holds, after the
//     system message, each earlier turn's messages in order — its input,
//     its call, the call's result and its answer, for a Succeeded one; at
//     least its input otherwise — then turn N's own input.
func CheckConversations(h History, convs Conversations) ([]Violation, ConvStats) {
	byName := map[string][]Version{}
	for _, all := range h.Runs {
		vs := objects(sortedVersions(all))
		if len(vs) > 0 {
			byName[vs[0].Run.Name] = vs
		}
	}
	reqs := map[string][]Request{}
	for _, r := range h.Requests {
		reqs[r.Run.Name] = append(reqs[r.Run.Name], r)
	}
	for _, rs := range reqs {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].At.Before(rs[j].At) })
	}
	names := make([]string, 0, len(convs))
	for c := range convs {
		names = append(names, c)
	}
	sort.Strings(names)
	var out []Violation
	var st ConvStats
	for _, c := range names {
		turns := convs[c]
		for k, t := range turns {
			st.Turns++
			vs := byName[t.Name]
			bad := func(rule string, i int, format string, a ...any) {
				v := Violation{Rule: rule, Run: t.Name, Detail: fmt.Sprintf("conversation %s, turn %d: ", c, k+1) + fmt.Sprintf(format, a...)}
				if len(vs) > 0 {
					v.UID, v.RV, v.Timeline = vs[0].Run.UID, vs[i].RV, Timeline(vs, i)
				}
				out = append(out, v)
			}
			if len(vs) == 0 {
				bad(RuleTurnLost, 0, "the recorder never saw the turn")
				continue
			}
			last := len(vs) - 1
			final := &vs[last].Run.Status
			succeeded := final.Phase == exagentv1.PhaseSucceeded
			exhausted := final.Phase == exagentv1.PhaseFailed && final.Reason == exagentv1.ReasonModelRequestRetriesExhausted
			switch {
			case succeeded:
				st.Succeeded++
			case exhausted:
				st.Exhausted++
			case final.Phase.IsTerminal():
				bad(RuleTurnLost, last, "ended %s (%s: %s), want Succeeded", final.Phase, final.Reason, final.Message)
			}

			effects, foreign := 0, 0
			for _, r := range reqs[t.Name] {
				if r.Kind == KindModel || !r.Applied {
					continue
				}
				effects++
				if r.CallID != t.CallID {
					foreign++
				}
			}
			st.Effects += effects
			switch {
			case foreign > 0:
				bad(RuleTurnEffects, last, "%d of its %d effects are of a call other than its own %s", foreign, effects, t.CallID)
			case succeeded && effects != 1:
				bad(RuleTurnEffects, last, "ended Succeeded with %d effects of call %s, want exactly 1", effects, t.CallID)
			case effects > 1:
				bad(RuleTurnEffects, last, "%d effects of call %s, want at most 1", effects, t.CallID)
			}

			if k > 0 {
				out = append(out, checkTurnOrder(c, k, turns[k-1], t, byName[turns[k-1].Name], vs, reqs)...)
			}
			for _, r := range reqs[t.Name] {
				if r.Kind != KindModel {
					continue
				}
				if k > 0 {
					st.HistoryChecked++
				}
				if why := carried(r.Messages, turns[:k], byName, t); why != "" {
					bad(RuleTurnHistory, upTo(vs, r.StoreRV), "its model request of step %d at %s: %s", r.Step, stamp(r.At), why)
				}
			}
		}
	}
	return out, st
}

// checkTurnOrder: turn (the k-th, from 0) started after prev ended, in
// the store and on the wire.
func checkTurnOrder(conv string, k int, prev, turn ConvTurn, pvs, vs []Version, reqs map[string][]Request) []Violation {
	var out []Violation
	bad := func(i int, format string, a ...any) {
		out = append(out, Violation{Rule: RuleTurnOrder, Run: turn.Name, UID: vs[0].Run.UID, RV: vs[i].RV,
			Detail: fmt.Sprintf("conversation %s, turn %d: ", conv, k+1) + fmt.Sprintf(format, a...), Timeline: Timeline(vs, i)})
	}
	ended := int64(-1)
	for _, v := range pvs {
		if turnEnded(&v.Run.Status) {
			ended = v.RV
			break
		}
	}
	for i, v := range vs {
		st := &v.Run.Status
		if st.Turn == nil && st.Attempts == 0 {
			continue
		}
		switch {
		case ended < 0:
			bad(i, "started (rv %d) while turn %s never ended", v.RV, prev.Name)
		case v.RV < ended:
			bad(i, "started at rv %d, before turn %s ended at rv %d", v.RV, prev.Name, ended)
		}
		if tr := st.Turn; tr == nil || tr.Index != int32(k+1) || tr.After != prev.Name {
			bad(i, "started as %+v, want index %d after %s", tr, k+1, prev.Name)
		}
		break
	}
	if p, own := reqs[prev.Name], reqs[turn.Name]; len(p) > 0 && len(own) > 0 {
		lastPrev, firstOwn := p[len(p)-1], own[0]
		if !firstOwn.At.After(lastPrev.At) {
			bad(len(vs)-1, "its first request (%s %s) arrived at %s, before the last request of turn %s (%s %s) at %s",
				firstOwn.Kind, firstOwn.Server, stamp(firstOwn.At), prev.Name, lastPrev.Kind, lastPrev.Server, stamp(lastPrev.At))
		}
	}
	return out
}

// turnEnded: the turn lets the next one start — it ended, with no call
// whose outcome nobody knows.
func turnEnded(st *exagentv1.AgentRunStatus) bool {
	return st.Phase.IsTerminal() && len(st.UncertainCalls()) == 0
}

// carried explains how msgs (a model request of turn own) fail to carry
// the earlier turns' messages before own's input ("" when they do).
func carried(msgs []ChatMessage, earlier []ConvTurn, byName map[string][]Version, own ConvTurn) string {
	var m []ChatMessage
	for _, x := range msgs {
		if x.Role != "system" {
			m = append(m, x)
		}
	}
	at := func(i int) string {
		if i >= len(m) {
			return "nothing"
		}
		return describeMessage(m[i])
	}
	isInput := func(x ChatMessage) bool { return x.Role == "user" && strings.HasPrefix(x.Content, RunInputPrefix) }
	i := 0
	for _, e := range earlier {
		if i >= len(m) || m[i].Role != "user" || m[i].Content != e.Input {
			return fmt.Sprintf("message %d is %s, want turn %s's input %q", i, at(i), e.Name, e.Input)
		}
		i++
		vs := byName[e.Name]
		if len(vs) == 0 || vs[len(vs)-1].Run.Status.Phase != exagentv1.PhaseSucceeded {
			for i < len(m) && !isInput(m[i]) {
				i++ // a turn that did not succeed: whatever it said, up to the next input
			}
			continue
		}
		want := []struct {
			ok   func(ChatMessage) bool
			what string
		}{
			{func(x ChatMessage) bool {
				return x.Role == "assistant" && len(x.ToolCalls) == 1 && x.ToolCalls[0] == e.CallID
			}, "turn " + e.Name + "'s call " + e.CallID},
			{func(x ChatMessage) bool { return x.Role == "tool" && x.ToolCallID == e.CallID }, "the result of call " + e.CallID},
			{func(x ChatMessage) bool {
				return x.Role == "assistant" && len(x.ToolCalls) == 0 && x.Content == e.Answer
			}, fmt.Sprintf("turn %s's answer %q", e.Name, e.Answer)},
		}
		for _, w := range want {
			if i >= len(m) || !w.ok(m[i]) {
				return fmt.Sprintf("message %d is %s, want %s", i, at(i), w.what)
			}
			i++
		}
	}
	if i >= len(m) || m[i].Role != "user" || m[i].Content != own.Input {
		return fmt.Sprintf("message %d is %s, want the turn's own input %q after the %d earlier turns", i, at(i), own.Input, len(earlier))
	}
	return ""
}

func describeMessage(x ChatMessage) string {
	s := x.Role
	switch {
	case len(x.ToolCalls) > 0:
		s += " calls " + strings.Join(x.ToolCalls, ",")
	case x.ToolCallID != "":
		s += " result of " + x.ToolCallID
	default:
		s += fmt.Sprintf(" %q", excerpt(x.Content))
	}
	return s
}
