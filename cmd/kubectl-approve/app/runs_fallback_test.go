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
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestListerFallsBackWithoutSelectableFields: against an apiserver whose
// AgentRun CRD predates the selectable fields (it answers a field selector
// with kube-apiserver's 400 "field label not supported"), the lister
// reads every run, filters them itself, warns once and does not ask with
// a selector again. The server here replays that answer over real HTTP;
// the filtering apiserver itself is tested in test/e2e.
func TestListerFallsBackWithoutSelectableFields(t *testing.T) {
	runs := exagentv1.AgentRunList{Items: []exagentv1.AgentRun{
		*makeRun("idle", "ns").Obj(),
		*makeRun("waits", "ns").Phase(exagentv1.PhaseAwaitingApproval).Obj(),
		*makeRun("done", "ns").Phase(exagentv1.PhaseSucceeded).Obj(),
	}}
	runs.SetResourceVersion("42")
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Query().Get("fieldSelector"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if sel := r.URL.Query().Get("fieldSelector"); sel != "" {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Reason: metav1.StatusReasonBadRequest, Code: http.StatusBadRequest,
				Message: "field label not supported: " + strings.SplitN(sel, "=", 2)[0]})
			return
		}
		_ = json.NewEncoder(w).Encode(runs)
	}))
	defer srv.Close()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(exagentv1.GroupVersion.WithKind("AgentRun"), meta.RESTScopeNamespace)
	c, err := client.New(&rest.Config{Host: srv.URL}, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	l := &runLister{c: c, warn: &warn}
	for i := 0; i < 2; i++ {
		got, rv, err := l.all(context.Background(), "ns", awaitingApproval())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Name != "waits" || rv != "42" {
			t.Errorf("read %d runs at %q, want only the waiting one at 42", len(got), rv)
		}
	}
	if diff := cmp.Diff([]string{"status.phase=AwaitingApproval", "", ""}, asked); diff != "" {
		t.Errorf("field selectors sent (-want +got):\n%s", diff)
	}
	if n := strings.Count(warn.String(), "warning: the installed AgentRun CRD has no selectable fields"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, warn.String())
	}
}
