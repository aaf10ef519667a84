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

package tools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
)

// TestMCPListings reads a real SDK server's tools/list through the
// registry: every tool with its input schema and annotations; the read
// never waits for the server (the refresher lists it and wakes the
// waiter); a listing is fresh only when fetched after the need's After,
// otherwise the stale one comes back with a refresh under way; a server
// gone keeps the last listing and says why.
func TestMCPListings(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	cat := &MCPCatalog{Client: loopbackOnly(t)}
	woken := make(chan types.NamespacedName, 16)
	cat.SetWake(WaiterRun, func(ns []types.NamespacedName) {
		for _, n := range ns {
			woken <- n
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = cat.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	reg := &Registry{MCP: cat, Secret: func(context.Context, string, exagentv1.SecretKeySelector) (string, error) { return "Bearer t", nil }}
	agent := &exagentv1.AgentSpec{Tools: []exagentv1.ToolSpec{{Name: "srv", MCP: &exagentv1.MCPTool{URL: srv.URL,
		Import: &exagentv1.MCPImport{}, Headers: []exagentv1.SecretHeader{{Name: "Authorization"}}}}}}
	run := mcplist.Waiter{Kind: WaiterRun, NamespacedName: types.NamespacedName{Namespace: "ns", Name: "r"}}
	wait := func() {
		t.Helper()
		select {
		case <-woken:
		case <-time.After(30 * time.Second):
			t.Fatal("the waiter was never woken")
		}
	}

	asked := time.Now()
	listings, waits := reg.MCPListings(ctx, "ns", agent, MCPNeed{After: asked, Waiter: run})
	if len(listings) != 0 || len(waits) != 1 || !waits[0].Pending || waits[0].URL != srv.URL {
		t.Fatalf("first read: %v %+v; want nothing yet and a refresh pending", listings, waits)
	}
	wait()
	listings, waits = reg.MCPListings(ctx, "ns", agent, MCPNeed{After: asked, Waiter: run})
	if len(waits) != 0 {
		t.Fatalf("after the refresh: waits %+v", waits)
	}
	l := listings["srv"]
	var names []string
	for _, x := range l.Tools {
		names = append(names, x.Name)
	}
	if diff := cmp.Diff([]string{"ask", "echo", "fail", "flaky", "hang"}, names); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	echo := l.Tools[1]
	if !strings.Contains(string(echo.InputSchema), `"required":["text"]`) {
		t.Errorf("echo's schema = %s, want the server's", echo.InputSchema)
	}
	if a := echo.Annotations; a == nil || a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint || a.Title != "Echo" {
		t.Errorf("echo's annotations = %+v, want readOnly, not destructive, title Echo", echo.Annotations)
	}

	srv.SetEchoSchema(map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}})
	if listings, waits = reg.MCPListings(ctx, "ns", agent, MCPNeed{After: asked}); len(waits) != 0 ||
		string(listings["srv"].Tools[1].InputSchema) != string(echo.InputSchema) {
		t.Errorf("fresh enough for the old need: waits %+v, schema %s; want the cached one", waits, listings["srv"].Tools[1].InputSchema)
	}
	claim := time.Now()
	listings, waits = reg.MCPListings(ctx, "ns", agent, MCPNeed{After: claim, Waiter: run})
	if len(waits) != 1 || listings["srv"] == nil || string(listings["srv"].Tools[1].InputSchema) != string(echo.InputSchema) {
		t.Fatalf("a need after the fetch: waits %+v; want the stale listing and a wait", waits)
	}
	wait()
	if listings, waits = reg.MCPListings(ctx, "ns", agent, MCPNeed{After: claim, Waiter: run}); len(waits) != 0 ||
		!strings.Contains(string(listings["srv"].Tools[1].InputSchema), `"n"`) {
		t.Errorf("after the refresh: waits %+v, schema %s; want the changed one", waits, listings["srv"].Tools[1].InputSchema)
	}

	srv.Close()
	gone := time.Now()
	reg.MCPListings(ctx, "ns", agent, MCPNeed{After: gone, Waiter: run})
	wait()
	listings, waits = reg.MCPListings(ctx, "ns", agent, MCPNeed{After: gone, Waiter: run})
	if len(waits) != 1 || waits[0].Err == nil || !strings.Contains(waits[0].Err.Error(), srv.URL) || listings["srv"] == nil {
		t.Errorf("server gone: %v %+v; want the last listing and an error naming the server", listings, waits)
	}
	if st := cat.Stats(); st.Fetches != 3 || st.Failures != 1 {
		t.Errorf("stats %+v, want 3 fetches (one per need), 1 failure", st)
	}
}

// TestMCPCatalogWakesByKind: a run and an Agent of the same name waiting
// on one server's refresh are each woken through their own kind's wake
// function (the run and Agent controllers share the catalog), and a kind
// nobody set a wake for is dropped, not handed to another.
func TestMCPCatalogWakesByKind(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	cat := &MCPCatalog{Client: loopbackOnly(t)}
	runs, agents := make(chan types.NamespacedName, 4), make(chan types.NamespacedName, 4)
	forward := func(to chan types.NamespacedName) func([]types.NamespacedName) {
		return func(ns []types.NamespacedName) {
			for _, n := range ns {
				to <- n
			}
		}
	}
	cat.SetWake(WaiterRun, forward(runs))
	cat.SetWake(WaiterAgent, forward(agents))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = cat.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	reg := &Registry{MCP: cat}
	agent := &exagentv1.AgentSpec{Tools: []exagentv1.ToolSpec{{Name: "echo", MCP: &exagentv1.MCPTool{URL: srv.URL}}}}
	key := types.NamespacedName{Namespace: "ns", Name: "same"}
	asked := time.Now()
	for _, kind := range []string{WaiterRun, WaiterAgent, "Unknown"} {
		if _, waits := reg.MCPListings(ctx, "ns", agent, MCPNeed{After: asked, Waiter: mcplist.Waiter{Kind: kind, NamespacedName: key}}); len(waits) != 1 {
			t.Fatalf("%s: waits %+v, want one refresh under way", kind, waits)
		}
	}
	for name, ch := range map[string]chan types.NamespacedName{"run": runs, "agent": agents} {
		select {
		case got := <-ch:
			if got != key {
				t.Errorf("%s woken as %v, want %v", name, got, key)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the %s was never woken", name)
		}
	}
	if len(runs)+len(agents) != 0 {
		t.Errorf("extra wakes: %d run, %d agent (the unknown kind must go to nobody)", len(runs), len(agents))
	}
}
