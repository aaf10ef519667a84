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

package archive

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/loop"
)

var t0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// sealedRun is an ended run whose transcript, calls and answer were sealed
// into a chain by the engine's own Seal, with what it held before.
func sealedRun(t *testing.T) (*exagentv1.AgentRun, []segment.Segment, loop.Status) {
	t.Helper()
	st := loop.Status{Phase: exagentv1.PhaseSucceeded}
	st.History = append(st.History, exagentv1.Message{Role: exagentv1.RoleUser, Content: "start"})
	for i := range 30 {
		id := fmt.Sprintf("c%d", i)
		args := fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("a", 700))
		result := strings.Repeat(fmt.Sprintf("result %d \x01 ", i), 300) // control characters: stored base64
		st.History = append(st.History,
			exagentv1.Message{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: id, Name: "t", Arguments: args}}},
			exagentv1.Message{Role: exagentv1.RoleTool, ToolCallID: id, Content: result})
		st.Calls = append(st.Calls, exagentv1.ToolCall{ID: id, Step: int32(i), Tool: "t", Args: args, State: exagentv1.CallSucceeded,
			Outcome: &exagentv1.CallOutcome{Succeeded: true, Result: result}})
	}
	st.Output = strings.Repeat("the answer ", 200)
	st.History = append(st.History, exagentv1.Message{Role: exagentv1.RoleAssistant, Content: st.Output})
	st.Cursor = exagentv1.Cursor{Step: 30, Stage: exagentv1.StageFinish}
	st.Receipts = []exagentv1.Receipt{{OperationID: "op-1", Decision: "Approve", Actor: &exagentv1.Actor{Username: "alice"}}}
	sealed, segs, err := loop.Seal(st, loop.SealConfig{RunName: "r", RunUID: "uid-1", HotBytes: 8 << 10, ValueBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 2 || len(sealed.History) >= len(st.History) {
		t.Fatalf("the fixture sealed %d segments and kept %d of %d messages: want a chain", len(segs), len(sealed.History), len(st.History))
	}
	run := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "uid-1", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec:       exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "a"}, Input: "start"},
		Status:     sealed,
	}
	return run, segs, st
}

func input(t *testing.T) (Input, loop.Status) {
	run, segs, whole := sealedRun(t)
	return Input{Run: run, Chain: segs, ID: loop.ArchiveID("uid-1"), At: t0, Decisions: []exagentv1.ApprovalDecision{{
		ObjectMeta: metav1.ObjectMeta{Name: "r-ok", Namespace: "ns"},
		Spec: exagentv1.ApprovalDecisionSpec{RunRef: exagentv1.LocalObjectReference{Name: "r"}, Decision: exagentv1.DecisionApprove,
			Reason: "fine", Actor: &exagentv1.Actor{Username: "alice"}},
		Status: exagentv1.ApprovalDecisionStatus{Phase: exagentv1.DecisionApplied, Receipt: &exagentv1.Receipt{OperationID: "op-1"}},
	}}}, whole
}

// TestWriteReadsTheWholeRunBack: the record holds the transcript, calls
// and answer as they were before sealing — every value read back from the
// chain — and the run, decisions and segments; it is the same bytes each
// time it is written.
func TestWriteReadsTheWholeRunBack(t *testing.T) {
	in, whole := input(t)
	var a, b bytes.Buffer
	if err := Write(&a, in); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two writes of one input differ: a signature over the first would not match the second")
	}
	var ev Event
	if err := json.Unmarshal(a.Bytes(), &ev); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if ev.Type != exagentv1.CloudEventArchived || ev.ID != "uid-1.run-archived" || ev.Source != "/apis/exagent.io/v1alpha1/namespaces/ns/agentruns/r" ||
		ev.SpecVersion != "1.0" || ev.Subject != "Succeeded" || !ev.Time.Equal(t0) {
		t.Errorf("envelope = %+v", ev)
	}
	r := ev.Data
	if diff := cmp.Diff(whole.History, r.Transcript); diff != "" {
		t.Errorf("transcript read back (-before sealing +archived):\n%s", diff)
	}
	if diff := cmp.Diff(whole.Calls, r.Calls); diff != "" {
		t.Errorf("calls read back (-before sealing +archived):\n%s", diff)
	}
	if r.Output != whole.Output {
		t.Errorf("output = %d bytes, want the whole answer (%d)", len(r.Output), len(whole.Output))
	}
	if diff := cmp.Diff(whole.Receipts, r.Receipts); diff != "" {
		t.Errorf("receipts (-want +got):\n%s", diff)
	}
	if len(r.Decisions) != 1 || r.Decisions[0].Spec.Reason != "fine" || r.Decisions[0].Spec.Actor.Username != "alice" ||
		r.Decisions[0].Status.Receipt == nil || r.Decisions[0].Kind != "ApprovalDecision" {
		t.Errorf("decisions = %+v", r.Decisions)
	}
	if r.Run.Name != "r" || r.Run.Kind != "AgentRun" || r.Run.ManagedFields != nil || r.Run.Status.Transcript == nil {
		t.Errorf("run = %+v", r.Run.ObjectMeta)
	}
	if len(r.Segments) != len(in.Chain) || r.Segments[0] != in.Chain[0].Name {
		t.Errorf("segments = %v", r.Segments)
	}
}

// TestWriteTurnOfAConversation: a turn archived with its conversation
// says which conversation and its place among the turns, right after the
// run; a run on its own has no such field.
func TestWriteTurnOfAConversation(t *testing.T) {
	in, _ := input(t)
	var plain bytes.Buffer
	if err := Write(&plain, in); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain.Bytes(), []byte(`"conversation":`)) {
		t.Error("a run on its own carries a conversation field")
	}
	in.Conversation = &Conversation{Name: "support-42", UID: "conv-uid", Turn: 2, Turns: 3}
	var buf bytes.Buffer
	if err := Write(&buf, in); err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := json.Unmarshal(buf.Bytes(), &ev); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if diff := cmp.Diff(in.Conversation, ev.Data.Conversation); diff != "" {
		t.Errorf("conversation (-want +got):\n%s", diff)
	}
	if i, j := bytes.Index(buf.Bytes(), []byte(`"conversation":`)), bytes.Index(buf.Bytes(), []byte(`},"transcript":[`)); i < 0 || j < i {
		t.Error("the conversation is not written between the run and the transcript (Record's order)")
	}
}

// TestWriteRefusesAnEditedValue: a record that cannot be proven is not written.
func TestWriteRefusesAnEditedValue(t *testing.T) {
	in, _ := input(t)
	for i := range in.Chain {
		for k := range in.Chain[i].Spec.Values {
			in.Chain[i].Spec.Values[k].Data = base64.StdEncoding.EncodeToString([]byte("edited"))
		}
	}
	if err := Write(io.Discard, in); err == nil || !strings.Contains(err.Error(), "does not match its ref") {
		t.Errorf("err = %v, want the edited value refused", err)
	}
}

// sink records what it receives.
type sink struct {
	mu      sync.Mutex
	header  http.Header
	length  int64
	body    []byte
	respond func(w http.ResponseWriter)
}

func newSink(t *testing.T, respond func(w http.ResponseWriter)) (*sink, *httptest.Server) {
	s := &sink{respond: respond}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.header, s.length, s.body = r.Header.Clone(), r.ContentLength, b
		s.mu.Unlock()
		if s.respond != nil {
			s.respond(w)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	return s, srv
}

// loopback is a client under the egress policy with 127.0.0.1 allowed, as
// --egress-allow-cidrs would.
func loopback() *http.Client {
	return egress.NewClient(egress.TransportOptions{Policy: egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})})
}

// TestSendSignsTheStreamedBody: the body arrives whole with its length
// announced, and the Standard Webhooks signature verifies over it.
func TestSendSignsTheStreamedBody(t *testing.T) {
	in, _ := input(t)
	s, srv := newSink(t, nil)
	key := []byte("0123456789abcdef0123456789abcdef")
	err := Send(t.Context(), loopback(), Request{URL: srv.URL, ID: in.ID, Key: "whsec_" + base64.StdEncoding.EncodeToString(key), At: t0,
		Namespace: "ns", Write: func(w io.Writer) error { return Write(w, in) }})
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	_ = Write(&want, in)
	if !bytes.Equal(s.body, want.Bytes()) || s.length != int64(want.Len()) {
		t.Fatalf("received %d bytes (Content-Length %d), want the record's %d", len(s.body), s.length, want.Len())
	}
	if got := s.header.Get("Content-Type"); got != ContentType {
		t.Errorf("Content-Type = %q", got)
	}
	id, ts := s.header.Get("webhook-id"), s.header.Get("webhook-timestamp")
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(s.body)
	if id != in.ID || ts != strconv.FormatInt(t0.Unix(), 10) ||
		s.header.Get("webhook-signature") != "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
		t.Errorf("headers %v do not sign the body", s.header)
	}
}

// TestSendFailures: a non-2xx answer is an error with a bounded excerpt,
// a redirect is never followed, a denied address is refused at dial time.
func TestSendFailures(t *testing.T) {
	in, _ := input(t)
	write := func(w io.Writer) error { return Write(w, in) }
	_, failing := newSink(t, func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(bytes.Repeat([]byte("x"), 1<<20))
	})
	err := Send(t.Context(), loopback(), Request{URL: failing.URL, ID: in.ID, At: t0, Write: write})
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") || len(err.Error()) > 512 {
		t.Errorf("err = %.200v (%d bytes), want HTTP 503 with a bounded excerpt", err, len(fmt.Sprint(err)))
	}
	target, to := newSink(t, nil)
	_, redirect := newSink(t, func(w http.ResponseWriter) {
		w.Header().Set("Location", to.URL)
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	err = Send(t.Context(), loopback(), Request{URL: redirect.URL, ID: in.ID, At: t0, Write: write})
	if err == nil || !strings.Contains(err.Error(), "not followed") || target.body != nil {
		t.Errorf("err = %v, want the redirect refused and its target untouched", err)
	}
	err = Send(t.Context(), egress.NewClient(egress.TransportOptions{}), Request{URL: to.URL, ID: in.ID, At: t0, Write: write})
	if err == nil || !strings.Contains(err.Error(), "egress denied") {
		t.Errorf("err = %v, want the default policy's refusal of loopback", err)
	}
}
