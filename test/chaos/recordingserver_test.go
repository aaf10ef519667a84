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
	"bytes"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestRecordingServers runs the shared core through both servers without
// a cluster, so a change to it shows here before the chaos suite runs:
// each request is journaled with the run it names, a hold announces and
// keeps it until ReleaseAll, and the tool server applies an idempotent
// key once.
func TestRecordingServers(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := exagentv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	run := types.NamespacedName{Namespace: "ns", Name: "r"}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: run.Name, UID: "uid-1"},
	}).Build()

	ts, err := NewToolServer(reader)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	ts.Idempotent("/once")
	send := func(path string) int {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, bytes.NewReader([]byte("{}")))
		req.Header.Set(headerKey, "uid-1/c1")
		req.Header.Set(headerRun, run.String())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}

	ts.HoldWhen(func(r Request) bool { return r.Server == "/once" })
	done := make(chan int, 1)
	go func() { done <- send("/once") }()
	select {
	case held := <-ts.Held():
		if held.Run != run || held.RunUID != "uid-1" || held.StoreRV == 0 || !held.Applied {
			t.Errorf("held request = %+v, want run %s, uid-1, a resourceVersion, applied", held, run)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held request was never announced")
	}
	select {
	case <-done:
		t.Fatal("a held request was answered before ReleaseAll")
	case <-time.After(50 * time.Millisecond):
	}
	ts.ReleaseAll()
	if code := <-done; code != http.StatusOK {
		t.Fatalf("released request answered %d", code)
	}
	if code := send("/once"); code != http.StatusOK {
		t.Fatalf("re-send answered %d", code)
	}
	j := ts.Journal()
	if len(j) != 2 || !j[0].Applied || j[1].Applied || !j[1].Idempotent {
		t.Errorf("tool journal = %+v, want the key applied once of two", j)
	}
	if r, ok := ts.Applied("uid-1/c1"); !ok || r.At != j[0].At {
		t.Errorf("Applied = %+v, %v; want the first request", r, ok)
	}

	ms, err := NewModelServer(reader, func(types.NamespacedName, int32) Turn { return Turn{Text: "done"} })
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"` + RunInputPrefix + run.String() + `"},{"role":"assistant","content":"x"}]}`
	resp, err := http.Post(ms.URL+"/chat/completions", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("model server answered %d", resp.StatusCode)
	}
	if j := ms.Journal(); len(j) != 1 || j[0].Run != run || j[0].Step != 1 || j[0].RunUID != "uid-1" {
		t.Errorf("model journal = %+v, want one step-1 request of %s", j, run)
	}

	// A turn of a conversation carries the earlier turn's messages: the
	// request is its own run's (the last input), at its own step 0, and
	// every message is journaled.
	body = `{"model":"m","messages":[{"role":"system","content":"s"},` +
		`{"role":"user","content":"` + RunInputPrefix + `ns/earlier"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"charge","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"assistant","content":"done"},` +
		`{"role":"user","content":"` + RunInputPrefix + run.String() + `"}]}`
	resp, err = http.Post(ms.URL+"/chat/completions", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	j = ms.Journal()
	if len(j) != 2 || j[1].Run != run || j[1].Step != 0 || len(j[1].Messages) != 6 {
		t.Fatalf("model journal = %+v, want a step-0 request of %s with 6 messages", j, run)
	}
	if m := j[1].Messages; m[2].Role != "assistant" || len(m[2].ToolCalls) != 1 || m[2].ToolCalls[0] != "c1" ||
		m[3].ToolCallID != "c1" || m[4].Content != "done" || m[5].Content != RunInputPrefix+run.String() {
		t.Errorf("journaled messages %+v, want the call, its answer, the final text and the new input", m)
	}
}
