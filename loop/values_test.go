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
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
	"github.com/exagent-io/exagent/internal/segment"
)

// TestEscapedLen: escapedLen is what encoding/json (the apiserver's
// encoder of custom resources) writes for a string, byte for byte.
func TestEscapedLen(t *testing.T) {
	cases := []string{"", "plain", "\u2028\u2029", "\xff\xfe", "a\x00b", `"\`, "<>&", "\b\f\n\r\t", "ünïcödé 🙂", "\xe2\x82"}
	for b := range 256 {
		cases = append(cases, string([]byte{byte(b)}), "x"+string([]byte{byte(b)})+"y")
	}
	x := uint32(2463534242) // xorshift: a fixed, varied sample of byte strings
	next := func() uint32 { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x }
	for range 200 {
		b := make([]byte, next()%64)
		for i := range b {
			b[i] = byte(next())
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := escapedLen(s); got != len(want) {
			t.Errorf("escapedLen(%q) = %d, encoding/json writes %d bytes: %s", s, got, len(want), want)
		}
	}
}

// fillers are the worst values for the stored size: each byte or rune
// takes the most room once escaped, or is not UTF-8 at all.
var fillers = map[string]string{
	"control":  "\x01",
	"html":     "<",
	"quote":    `"`,
	"invalid":  "\xff",
	"u2028":    "\u2028",
	"newlines": "\n",
}

// worst is a value of about maxContent bytes of filler.
func worst(filler string) string { return strings.Repeat(filler, maxContent/len(filler)) }

// worstArgs is tool arguments whose canonical JSON is about maxContent
// bytes, its string made of filler.
func worstArgs(t *testing.T, filler string) string {
	t.Helper()
	one, err := canonical.JSON(json.RawMessage(mustJSON(t, map[string]string{"q": filler})))
	if err != nil {
		t.Fatal(err)
	}
	per := len(one) - len(`{"q":""}`)
	if per == 0 { // the invalid byte: canonical JSON writes U+FFFD, 3 bytes
		per = 3
	}
	n := (maxContent - 16) / per
	return mustJSON(t, map[string]string{"q": strings.Repeat(filler, n)})
}

// checkSegments: every segment's stored form (encoding/json, as the
// apiserver writes it) is within MaxSegmentBytes, and every value's data
// within the CRD's maxLength of characters.
func checkSegments(t *testing.T, segs []segment.Segment) {
	t.Helper()
	for _, s := range segs {
		b, err := json.Marshal(s.Spec)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > exagentv1.MaxSegmentBytes {
			t.Errorf("segment %d takes %d bytes stored, over %d", s.Spec.Index, len(b), exagentv1.MaxSegmentBytes)
		}
		for _, v := range s.Spec.Values {
			if n := utf8.RuneCountInString(v.Data); n > exagentv1.MaxSegmentValueLength {
				t.Errorf("segment %d: value %s is %d characters, over %d", s.Spec.Index, v.SHA256[:8], n, exagentv1.MaxSegmentValueLength)
			}
		}
	}
}

// TestWorstCaseValuesFitASegment: a model answer, tool arguments, a tool
// result and a final answer of maxContent bytes that take six times that
// escaped are sealed into segments that fit (base64 where escaping costs
// more), under the default value threshold and under one so large that
// the values stay inline until the journal seals them; the transcript
// and the journal read back exactly what the engine recorded.
func TestWorstCaseValuesFitASegment(t *testing.T) {
	for fname, filler := range fillers {
		for cname, cfg := range map[string]SealConfig{
			"default":     {},
			"large value": {HotBytes: 4 << 10, ValueBytes: 1 << 29},
			"small hot":   {HotBytes: 4 << 10, ValueBytes: MinValueBytes},
		} {
			t.Run(fname+"/"+cname, func(t *testing.T) {
				env := mustEnv(t, MakeAgent().HTTPTool("read", false).Default(exagentv1.PolicyAllow).MaxSteps(20).Spec(), MakeRun().Spec())
				h := newSealingHarness(t, env)
				h.cfg.HotBytes, h.cfg.ValueBytes = cfg.HotBytes, cfg.ValueBytes
				h.claim(w1)
				h.seal()
				var args []string
				for i := range 3 {
					h.step()
					h.seal()
					r := tools(call(fmt.Sprintf("c%d", i), "read", worstArgs(t, filler)))
					r.Content = worst(filler)
					canon, _ := canonical.JSON(json.RawMessage(r.ToolCalls[0].Arguments))
					args = append(args, string(canon))
					h.respond(r)
					h.seal()
					if act := h.step(); act.Kind != ActRunTools {
						t.Fatalf("turn %d: %s %s %s", i, act.Kind, h.s.Reason, h.s.Message)
					}
					h.seal()
					h.outcome(fmt.Sprintf("c%d", i), ResultSucceeded, worst(filler))
					h.seal()
				}
				act := h.step()
				if act.Kind != ActCallModel {
					t.Fatalf("last turn: %s %s", act.Kind, h.s.Message)
				}
				sent, err := segment.Transcript(h.chain, act.Model.Messages) // what the model is sent
				if err != nil {
					t.Fatal(err)
				}
				h.seal()
				h.respond(text(worst(filler)))
				h.seal()
				if act := h.step(); act.Kind != ActFinish {
					t.Fatalf("finish: %s %s", act.Kind, h.s.Message)
				}
				h.seal()
				checkSegments(t, h.chain)
				if len(h.chain) == 0 {
					t.Fatal("nothing was sealed")
				}
				if err := segment.Verify(*h.s.Transcript, runUID, h.chain); err != nil {
					t.Fatal(err)
				}
				got, err := segment.Transcript(h.chain, h.s.History)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(sent)+1 {
					t.Fatalf("transcript has %d messages, the last request %d (+1 answer)", len(got), len(sent))
				}
				for i := range sent {
					if got[i].Content != sent[i].Content || mustJSON(t, got[i].ToolCalls) != mustJSON(t, sent[i].ToolCalls) {
						t.Fatalf("message %d read back differs", i)
					}
				}
				whole := bound(worst(filler), maxContent)
				for i := range 3 {
					a, r := got[2+2*i], got[3+2*i]
					if a.Content != whole || len(a.ToolCalls) != 1 || a.ToolCalls[0].Arguments != args[i] || r.Content != whole {
						t.Fatalf("turn %d was not kept whole: answer %d bytes, result %d bytes", i, len(a.Content), len(r.Content))
					}
				}
				if last := got[len(got)-1]; last.Content != whole {
					t.Fatalf("the final answer was not kept whole: %d bytes", len(last.Content))
				}
				calls, err := segment.SealedCalls(h.chain, h.s.Calls)
				if err != nil || len(calls) != 3 || calls[2].Outcome.Result != whole {
					t.Fatalf("journal read back: %d calls, %v", len(calls), err)
				}
				if cname == "default" {
					for i, n := range h.writes {
						if n > DefaultHotBytes {
							t.Fatalf("write %d: status of %d bytes, over the hot budget %d", i, n, DefaultHotBytes)
						}
					}
				}
			})
		}
	}
}

// fatActor has every field at its CRD bound, of the character that costs
// the most escaped.
func fatActor() exagentv1.Actor {
	a := exagentv1.Actor{Username: strings.Repeat("<", 512), UID: strings.Repeat("<", 256),
		Impersonated: true, ImpersonatedBy: strings.Repeat("<", 512)}
	for i := range 64 {
		a.Groups = append(a.Groups, fmt.Sprintf("%02d", i)+strings.Repeat("<", 510))
	}
	return a
}

// TestWorstCaseEntriesFitASegment: journal entries whose fields are all at
// their bounds — a message with a full turn of tool calls whose values
// stayed inline, a resolved mcp call with its evidence, an approval and a
// receipt of a decider with 64 groups — each fit one segment.
func TestWorstCaseEntriesFitASegment(t *testing.T) {
	lt := func(n int) string { return strings.Repeat("<", n) }
	big := strings.Repeat("\x01", 20000)
	msg := exagentv1.Message{Role: exagentv1.RoleAssistant, Content: big}
	for i := range maxToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, exagentv1.MessageToolCall{ID: fmt.Sprintf("%02d", i) + lt(62), Name: lt(64),
			Arguments: fmt.Sprintf(`{"q":"%d%s"}`, i, lt(maxContent/4))})
	}
	c := exagentv1.ToolCall{ID: lt(64), Step: 0, Tool: lt(64), Args: msg.ToolCalls[0].Arguments, ArgsHash: lt(128),
		PayloadHash: lt(128), IdempotencyKey: lt(256), State: exagentv1.CallSucceeded, Rule: lt(128),
		MCP:     &exagentv1.CallMCP{Server: lt(2048), Tool: lt(256), Title: lt(256)},
		Outcome: &exagentv1.CallOutcome{Succeeded: true, Result: big + "r", ResolvedBy: lt(512), Evidence: lt(4096)}}
	a := exagentv1.Approval{ID: lt(64), CallID: c.ID, PayloadHash: lt(128), Revision: 1, State: exagentv1.ApprovalApproved,
		Rule: lt(128), Decision: string(exagentv1.DecisionApprove), Reason: lt(4096), Actor: new(fatActor()),
		Notified: []exagentv1.NotifyEvent{exagentv1.NotifyApprovalRequested, exagentv1.NotifyApprovalExpiring}}
	r := exagentv1.Receipt{OperationID: lt(253), DecisionName: lt(253), Decision: string(exagentv1.DecisionApprove),
		Target: lt(64), PayloadHash: lt(128), Revision: 1, Actor: new(fatActor())}
	st := Status{Phase: exagentv1.PhaseAwaitingApproval, Revision: 2, Cursor: exagentv1.Cursor{Step: 1},
		History:   []exagentv1.Message{msg, msg, {Role: exagentv1.RoleUser, Content: "last"}},
		Calls:     []exagentv1.ToolCall{c},
		Approvals: []exagentv1.Approval{a},
		Receipts:  []exagentv1.Receipt{r, r, r}}
	for name, cfg := range map[string]SealConfig{
		"default":     {RunName: "run", RunUID: runUID},
		"large value": {RunName: "run", RunUID: runUID, HotBytes: 4 << 10, ValueBytes: 1 << 29},
	} {
		t.Run(name, func(t *testing.T) {
			sealed, segs, err := Seal(st, cfg)
			if err != nil {
				t.Fatalf("Seal: %v", err)
			}
			checkSegments(t, segs)
			if err := segment.Verify(*sealed.Transcript, runUID, segs); err != nil {
				t.Fatal(err)
			}
			if len(sealed.Receipts) != 0 || len(segment.SealedReceipts(segs)) != 3 || sealed.Transcript.Receipts != 3 {
				t.Fatalf("receipts of revision 1 at revision 2: %d hot, %d sealed", len(sealed.Receipts), len(segment.SealedReceipts(segs)))
			}
			msgs, err := segment.Transcript(segs, sealed.History)
			if err != nil || len(msgs) != 3 || msgs[0].Content != big || msgs[1].ToolCalls[31].Arguments != msg.ToolCalls[31].Arguments {
				t.Fatalf("transcript read back: %d messages, %v", len(msgs), err)
			}
			calls, err := segment.SealedCalls(segs, sealed.Calls)
			if err != nil || len(calls) != 1 || calls[0].Outcome.Result != c.Outcome.Result || calls[0].Outcome.Evidence != c.Outcome.Evidence {
				t.Fatalf("journal read back: %v", err)
			}
		})
	}
}

// TestFailUnstorable: a run whose next status the store refuses for good
// ends Failed from the status last stored, with what its attempt learned:
// a known outcome without its result, Uncertain for an unknown one and for
// a call still in flight — never a call that looks as if it did not run.
func TestFailUnstorable(t *testing.T) {
	env := mustEnv(t, MakeAgent().HTTPTool("read", false).Default(exagentv1.PolicyAllow).Spec(), MakeRun().Spec())
	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("a", "read", `{}`), call("b", "read", `{}`), call("c", "read", `{}`)))
	h.step()
	stored := h.s
	out := strings.Repeat("\x01", 1000)
	got, err := FailUnstorable(stored, &h.f, []ToolResult{
		{CallID: "a", Kind: ResultSucceeded, Output: out},
		{CallID: "b", Kind: ResultUnknown},
		{CallID: "zz", Kind: ResultSucceeded},
	}, exagentv1.ReasonStatusRejected, "refused", h.now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != exagentv1.PhaseFailed || got.Reason != exagentv1.ReasonStatusRejected || got.Claim != nil {
		t.Fatalf("phase %s reason %s claim %v", got.Phase, got.Reason, got.Claim)
	}
	want := map[string]exagentv1.CallState{"a": exagentv1.CallSucceeded, "b": exagentv1.CallUncertain, "c": exagentv1.CallUncertain}
	for _, c := range got.Calls {
		if c.State != want[c.ID] {
			t.Errorf("call %s is %s, want %s", c.ID, c.State, want[c.ID])
		}
	}
	a := got.Calls[findCall(&got, "a")]
	if a.Outcome == nil || !a.Outcome.Succeeded || !strings.Contains(a.Outcome.Result, "1000 bytes, sha256 "+canonical.SHA256Hex(out)) {
		t.Errorf("outcome of a: %+v", a.Outcome)
	}
	other := Fence{Holder: "another", Attempt: 9}
	again, _ := FailUnstorable(stored, &other, []ToolResult{{CallID: "a", Kind: ResultSucceeded}}, exagentv1.ReasonStatusRejected, "x", h.now)
	if again.Calls[findCall(&again, "a")].State != exagentv1.CallUncertain {
		t.Errorf("another attempt's result was recorded")
	}
	if _, err := FailUnstorable(got, &h.f, nil, exagentv1.ReasonStatusRejected, "x", h.now); !IsKind(err, KindConflict) {
		t.Errorf("an ended run failed again: %v", err)
	}
}

// TestEnvValueBytes: the engine's size checks count a value as inline or
// as a ref by the threshold Seal is configured with: with a 16 KiB
// threshold a 10 KiB result stays in the status, and the engine charges
// it there — under the default threshold it would count it as a ref and
// let the status grow past its budget.
func TestEnvValueBytes(t *testing.T) {
	agent := MakeAgent().HTTPTool("read", false).Default(exagentv1.PolicyAllow).Spec()
	const budget = 48 << 10
	for name, tc := range map[string]struct {
		valueBytes int
		wantWhole  bool
	}{
		"default threshold: sealed, the result fits whole":  {valueBytes: 0, wantWhole: true},
		"16 KiB threshold: inline, the result is shortened": {valueBytes: 16 << 10, wantWhole: false},
	} {
		t.Run(name, func(t *testing.T) {
			env, err := NewEnv(EnvInput{RunUID: runUID, RunName: "run", Agent: agent, AgentGeneration: 1, Run: MakeRun().Spec(),
				SizeBudget: budget, ValueBytes: tc.valueBytes})
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, env).claim(w1)
			h.step()
			var calls []exagentv1.MessageToolCall
			for i := range 6 {
				calls = append(calls, call(fmt.Sprintf("c%d", i), "read", `{}`))
			}
			h.respond(tools(calls...))
			h.step()
			result := strings.Repeat("r", 10<<10)
			for i := range 6 {
				h.outcome(fmt.Sprintf("c%d", i), ResultSucceeded, result)
			}
			whole := true
			for _, c := range h.s.Calls {
				whole = whole && c.Outcome.Result == result
			}
			if whole != tc.wantWhole {
				t.Fatalf("every result whole: %v, want %v", whole, tc.wantWhole)
			}
			sealed, _, err := Seal(h.s, SealConfig{RunName: "run", RunUID: runUID, HotBytes: 1 << 30, ValueBytes: tc.valueBytes})
			if err != nil {
				t.Fatal(err)
			}
			if n := encodedLen(&sealed); n > budget {
				t.Fatalf("the sealed status takes %d bytes, over the budget %d the engine checked", n, budget)
			}
		})
	}
}

// TestReceiptsAreSealed: forty approvals by a decider whose identity is as
// large as admission allows (each receipt ≈ 33 KiB): no decision is ever
// refused StatusTooLarge, every write stays a few receipts large, and a
// repeated decision finds its receipt through the chain — the same
// receipt, the state unchanged — while one that differs conflicts.
func TestReceiptsAreSealed(t *testing.T) {
	env := mustEnv(t, MakeAgent().HTTPTool("pay", false).Rule("ask", exagentv1.PolicyAsk, "", "pay").MaxSteps(100).Spec(),
		MakeRun().Spec())
	h := newSealingHarness(t, env)
	decider := fatActor()
	decider.Username = "alice"
	const approvals = 40
	var first DecisionCmd
	var firstReceipt exagentv1.Receipt
	h.claim(w1)
	h.seal()
	for i := range approvals {
		h.step()
		h.seal()
		h.respond(tools(call(fmt.Sprintf("p%d", i), "pay", fmt.Sprintf(`{"n":%d}`, i))))
		h.seal()
		if act := h.step(); act.Kind != ActPause {
			t.Fatalf("turn %d: %s %s", i, act.Kind, h.s.Message)
		}
		h.seal()
		cmd := approveCmd(t, h.s, fmt.Sprintf("p%d", i), fmt.Sprintf("op-%d", i), "alice")
		cmd.Actor = decider
		r := h.decide(cmd) // fails the test on StatusTooLarge
		h.seal()
		if i == 0 {
			first, firstReceipt = cmd, r
		}
		h.claim(w1)
		h.seal()
		if act := h.step(); act.Kind != ActRunTools {
			t.Fatalf("turn %d after approval: %s %s", i, act.Kind, h.s.Message)
		}
		h.seal()
		h.outcome(fmt.Sprintf("p%d", i), ResultSucceeded, "paid")
		h.seal()
	}
	receipt := encodedLen(&Status{Receipts: []exagentv1.Receipt{firstReceipt}})
	for i, n := range h.writes {
		if n > 4*receipt+DefaultHotBytes {
			t.Fatalf("write %d: status of %d bytes; a receipt takes %d", i, n, receipt)
		}
	}
	if h.s.Transcript == nil || h.s.Transcript.Receipts < approvals-2 || len(h.s.Receipts) > 2 {
		t.Fatalf("receipts: %d hot, head counts %v sealed", len(h.s.Receipts), h.s.Transcript)
	}
	if err := segment.Verify(*h.s.Transcript, runUID, h.chain); err != nil {
		t.Fatal(err)
	}
	if !NeedSealedReceipts(h.s, first) {
		t.Fatal("the first operation's receipt is sealed, but NeedSealedReceipts says it is not needed")
	}
	if _, _, err := Decide(h.s, env, first, h.now); err == nil {
		t.Fatal("without its sealed receipt a repeated decision was applied as new")
	}
	first.Sealed = segment.SealedReceipts(h.chain)
	st, r, err := Decide(h.s, env, first, h.now)
	if err != nil || mustJSON(t, r) != mustJSON(t, firstReceipt) || diffState(h.s, st) != "" {
		t.Fatalf("repeated decision: err %v, receipt %+v (want the stored one)", err, r.OperationID)
	}
	other := first
	other.Actor = actor("bob")
	if _, _, err := Decide(h.s, env, other, h.now); !IsKind(err, KindConflict) {
		t.Fatalf("the same operation by another actor: %v, want a conflict", err)
	}
}

// TestSegmentValueBounds: a value of MaxValueBytes, base64-encoded, is
// exactly MaxSegmentValueLength, and two of them fit one segment. (That the
// CRDs enforce those bounds is api/v1alpha1's TestStringBoundsMatchTheCRD.)
func TestSegmentValueBounds(t *testing.T) {
	if base := 4 * ((exagentv1.MaxValueBytes + 2) / 3); exagentv1.MaxSegmentValueLength != base || 2*(base+200)+segmentOverhead > exagentv1.MaxSegmentBytes {
		t.Errorf("MaxSegmentValueLength %d: the base64 of %d bytes is %d, and two must fit a segment", exagentv1.MaxSegmentValueLength, exagentv1.MaxValueBytes, base)
	}
}
