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

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
)

// TestMCPListingBoundedWhileRead: a server whose tools/list never ends,
// each page one tool of 256 KiB under the listing bound (1 MiB here, 4 MiB
// by default) — its bulk a description, or a schema of tiny properties
// whose JSON values pass their bound first — is read to the bound and no
// further: the listing fails naming the bound after at most the pages that
// fit and the one that crossed it, the server sees no further page asked,
// and the waiter hears why. Before, each page was bounded on its own (8 MiB) but the listing
// only once whole: the pages piled up to 512 tools — 128 MiB here, 4 GiB
// of 8 MiB pages — before the bound was checked.
func TestMCPListingBoundedWhileRead(t *testing.T) {
	const page, bound = 256 << 10, 1 << 20
	for name, tc := range map[string]struct {
		shape mcptest.PagingShape
		want  string
	}{
		"description": {mcptest.PagingDescription, "the listing (every page's answer together) is over the 1 MiB bound: exagent read no more of it"},
		// ~87k properties a page: the values' bound (262144) is crossed
		// first, in the fourth page, before the bytes'.
		"schema": {mcptest.PagingSchema, "the listing (every page's answer together) has more than 262144 JSON values"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := mcptest.StartPaging(page, tc.shape)
			defer srv.Close()
			cat := &MCPCatalog{Client: loopbackOnly(t), Options: mcplist.Options{MaxListingBytes: bound}}
			woken := make(chan types.NamespacedName, 4)
			cat.SetWake(WaiterAgent, func(ns []types.NamespacedName) {
				for _, n := range ns {
					woken <- n
				}
			})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { _ = cat.Start(ctx); close(done) }()
			defer func() { cancel(); <-done }()

			reg := &Registry{MCP: cat}
			agent := &exagentv1.AgentSpec{Tools: []exagentv1.ToolSpec{{Name: "pages", MCP: &exagentv1.MCPTool{URL: srv.URL, Import: &exagentv1.MCPImport{}}}}}
			need := MCPNeed{After: time.Now(), Waiter: mcplist.Waiter{Kind: WaiterAgent, NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}}
			reg.MCPListings(ctx, "ns", agent, need)
			select {
			case <-woken:
			case <-time.After(30 * time.Second):
				t.Fatal("the listing never ended")
			}
			listings, waits := reg.MCPListings(ctx, "ns", agent, need)
			pages, deepest, lists, written := srv.Served()
			t.Logf("served %d pages (%d deep) in %d listings, %d KiB written", pages, deepest, lists, written>>10)
			if len(waits) != 1 || waits[0].Err == nil || listings["pages"] != nil {
				t.Fatalf("listings %v, waits %+v; want no listing and the failure", listings, waits)
			}
			msg := waits[0].Err.Error()
			for _, want := range []string{"tools/list of " + srv.URL, tc.want, "exagent read no more of it"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the listing's error %q does not say %q", msg, want)
				}
			}
			// Four pages fit 1 MiB but for the handshake's few hundred
			// bytes: the fourth crosses it.
			if most := bound/page + 1; deepest > most || lists != 1 {
				t.Errorf("the server was asked %d pages deep in %d listings, want at most %d in 1", deepest, lists, most)
			}
			if st := cat.Stats(); st.Bytes != 0 || st.Failures != 1 {
				t.Errorf("refresher %+v, want one failure and nothing kept", st)
			}
		})
	}
}

// TestMCPCatalogNamespaceQuota: a namespace past its share of the
// listing cache (MaxEntriesPerTenant, 128 by default; 1 here) gets, for
// its further server, an error naming the server, the namespace and the
// quota — what its Agent's Ready and its runs show — while another
// namespace's listing of the same server goes on.
func TestMCPCatalogNamespaceQuota(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	cat := &MCPCatalog{Client: loopbackOnly(t), Options: mcplist.Options{MaxEntriesPerTenant: 1}}
	woken := make(chan types.NamespacedName, 16)
	cat.SetWake(WaiterAgent, func(ns []types.NamespacedName) {
		for _, n := range ns {
			woken <- n
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = cat.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	reg := &Registry{MCP: cat}
	agent := &exagentv1.AgentSpec{Tools: []exagentv1.ToolSpec{
		{Name: "first", MCP: &exagentv1.MCPTool{URL: srv.URL + "/first", Import: &exagentv1.MCPImport{}}},
		{Name: "second", MCP: &exagentv1.MCPTool{URL: srv.URL + "/second", Import: &exagentv1.MCPImport{}}},
	}}
	listed := func(ns string) (map[string]bool, []MCPWait) {
		t.Helper()
		need := MCPNeed{Waiter: mcplist.Waiter{Kind: WaiterAgent, NamespacedName: types.NamespacedName{Namespace: ns, Name: "a"}}}
		if _, waits := reg.MCPListings(ctx, ns, agent, need); len(waits) > 0 && waits[0].Pending {
			select {
			case <-woken:
			case <-time.After(30 * time.Second):
				t.Fatal("the listing never ended")
			}
		}
		listings, waits := reg.MCPListings(ctx, ns, agent, need)
		got := map[string]bool{}
		for name := range listings {
			got[name] = true
		}
		return got, waits
	}
	got, waits := listed("team-a")
	if !got["first"] || got["second"] || len(waits) != 1 || waits[0].Tool != "second" {
		t.Fatalf("team-a: listed %v, waits %+v; want first listed, second refused", got, waits)
	}
	want := `the MCP server ` + srv.URL + `/second is not listed: namespace "team-a" already has 1 MCP servers`
	if err := waits[0].Err; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("team-a's second server: %v, want %q", err, want)
	}
	if got, waits := listed("team-b"); !got["first"] || len(waits) != 1 || waits[0].Tool != "second" {
		t.Errorf("team-b: listed %v, waits %+v; want its own first listed beside team-a's", got, waits)
	}
	if got, _ := listed("team-a"); !got["first"] {
		t.Errorf("team-a's first listing was evicted for team-b's")
	}
}
