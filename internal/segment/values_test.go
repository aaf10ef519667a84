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

package segment

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
)

// TestResolve: a ref gives back its value, decoded, only when the chain
// holds exactly that value; anything else is a CorruptError naming it.
func TestResolve(t *testing.T) {
	plain, binary := "a sealed result", "\x01\x02 control characters \x03"
	ref := func(v string) *exagentv1.ValueRef {
		return &exagentv1.ValueRef{Segment: "s", SHA256: canonical.SHA256Hex(v), Bytes: int64(len(v))}
	}
	values := ValuesOf([]Segment{{Name: "s", Spec: exagentv1.AgentRunSegmentSpec{Values: []exagentv1.SegmentValue{
		{SHA256: canonical.SHA256Hex(plain), Data: plain},
		{SHA256: canonical.SHA256Hex(binary), Encoding: exagentv1.ValueBase64, Data: base64.StdEncoding.EncodeToString([]byte(binary))},
		{SHA256: canonical.SHA256Hex("swapped"), Data: "not it"},
		{SHA256: canonical.SHA256Hex("odd"), Encoding: "Rot13", Data: "bqq"},
	}}}})
	cases := map[string]struct {
		ref  *exagentv1.ValueRef
		want string
		bad  string
	}{
		"plain":            {ref: ref(plain), want: plain},
		"base64":           {ref: ref(binary), want: binary},
		"not in the chain": {ref: ref("elsewhere"), bad: "is not in the run's chain"},
		"other content":    {ref: ref("swapped"), bad: "does not match its ref"},
		"other length":     {ref: func() *exagentv1.ValueRef { r := ref(plain); r.Bytes++; return r }(), bad: "does not match its ref"},
		"unknown encoding": {ref: ref("odd"), bad: `unknown encoding "Rot13"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := values.Resolve(tc.ref)
			if tc.bad == "" {
				if err != nil || got != tc.want {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if c, ok := AsCorrupt(err); !ok || !strings.Contains(c.Message, tc.bad) {
				t.Fatalf("got %v, want a CorruptError containing %q", err, tc.bad)
			}
		})
	}
}

// TestReadBack: the transcript and the journal read back from a chain are
// its entries, then the hot ones, every ref resolved.
func TestReadBack(t *testing.T) {
	answer, result := strings.Repeat("a long answer. ", 10), strings.Repeat("a long result. ", 10)
	vref := func(v string) *exagentv1.ValueRef {
		return &exagentv1.ValueRef{Segment: "v", SHA256: canonical.SHA256Hex(v), Bytes: int64(len(v))}
	}
	chain := []Segment{
		{Name: "j", Spec: exagentv1.AgentRunSegmentSpec{
			Messages: []exagentv1.Message{{Role: exagentv1.RoleUser, Content: "go"}, {Role: exagentv1.RoleAssistant, ContentRef: vref(answer)}},
			Calls:    []exagentv1.ToolCall{{ID: "c0", Args: "{}", Outcome: &exagentv1.CallOutcome{ResultRef: vref(result)}}},
			Receipts: []exagentv1.Receipt{{OperationID: "op0"}},
		}},
		{Name: "v", Spec: exagentv1.AgentRunSegmentSpec{Values: []exagentv1.SegmentValue{
			{SHA256: canonical.SHA256Hex(answer), Data: answer}, {SHA256: canonical.SHA256Hex(result), Data: result},
		}}},
	}
	msgs, err := Transcript(chain, []exagentv1.Message{{Role: exagentv1.RoleUser, Content: "again"}})
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs := []exagentv1.Message{{Role: exagentv1.RoleUser, Content: "go"}, {Role: exagentv1.RoleAssistant, Content: answer},
		{Role: exagentv1.RoleUser, Content: "again"}}
	if diff := cmp.Diff(wantMsgs, msgs); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
	calls, err := SealedCalls(chain, []exagentv1.ToolCall{{ID: "c1", Args: "{}"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].ID != "c0" || calls[0].Outcome.Result != result || calls[1].ID != "c1" {
		t.Errorf("calls: %+v", calls)
	}
	if chain[0].Spec.Calls[0].Outcome.Result != "" {
		t.Error("reading back changed the chain")
	}
	if r := SealedReceipts(chain); len(r) != 1 || r[0].OperationID != "op0" {
		t.Errorf("receipts: %+v", r)
	}
	if _, err := Transcript(chain[:1], nil); err == nil || !strings.Contains(err.Error(), "message 1: value ") {
		t.Errorf("a transcript without its values: %v, want the message and value named", err)
	}
}
