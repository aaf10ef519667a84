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

package mcplist

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// tenantReq is a request of tenant for server url (its key names both).
func tenantReq(tenant, url string) Request {
	return Request{Key: tenant + "\x00" + url, URL: url, Tenant: tenant, After: t0}
}

// listed asks for tenant's servers one by one and waits for each refresh.
func listed(t *testing.T, r *Refresher[listing], tenant string, urls ...string) {
	t.Helper()
	for _, u := range urls {
		r.Get(tenantReq(tenant, u))
		waitFor(t, "the listing of "+u, func() bool {
			st, _ := r.Peek(tenantReq(tenant, u).Key)
			return st.Listing != nil || st.Err != nil
		})
	}
}

func settled(r *Refresher[listing]) bool { st := r.Stats(); return st.InFlight == 0 && st.Queued == 0 }

// TestRefresherTenantQuota: one namespace naming more servers than its
// quota (DefaultMaxEntriesPerTenant, 128) gets a place for 128 of them
// and, for the rest, an error that names it and the quota; no entry of
// another namespace is evicted for it, however recently it asked, and the
// other namespace still gets a place for a new server. Before the quota,
// the hostile namespace's servers filled the table and the ordinary one's
// listings were evicted, least recently used first.
func TestRefresherTenantQuota(t *testing.T) {
	s := newServers()
	r, _ := start(t, s, clocktesting.NewFakePassiveClock(t0), Options{MaxEntries: 200})
	listed(t, r, "ordinary", "o1", "o2", "o3")

	var refused []error
	for round := range 2 { // the second round makes every hostile entry more recently used than the ordinary ones
		for i := range 300 {
			if st := r.Get(tenantReq("hostile", fmt.Sprintf("h%03d", i))); st.Err != nil && round == 1 {
				refused = append(refused, st.Err)
			}
		}
		waitFor(t, "the hostile refreshes to end", func() bool { return settled(r) })
	}

	for _, u := range []string{"o1", "o2", "o3"} {
		if st, ok := r.Peek(tenantReq("ordinary", u).Key); !ok || st.Listing == nil {
			t.Errorf("the ordinary namespace's listing of %s was evicted for the hostile namespace's servers", u)
		}
	}
	kept := 0
	for i := range 300 {
		if st, ok := r.Peek(tenantReq("hostile", fmt.Sprintf("h%03d", i)).Key); ok && st.Listing != nil {
			kept++
		}
	}
	if kept != DefaultMaxEntriesPerTenant {
		t.Errorf("the hostile namespace has %d servers listed, want its quota %d", kept, DefaultMaxEntriesPerTenant)
	}
	if len(refused) != 300-DefaultMaxEntriesPerTenant {
		t.Fatalf("%d of the hostile namespace's 300 servers refused, want %d", len(refused), 300-DefaultMaxEntriesPerTenant)
	}
	want := fmt.Sprintf(`the MCP server h%03d is not listed: namespace "hostile" already has %d MCP servers`, DefaultMaxEntriesPerTenant, DefaultMaxEntriesPerTenant)
	if msg := refused[0].Error(); !strings.Contains(msg, want) || !strings.Contains(msg, "the most one namespace may have") {
		t.Errorf("a refused server says %q, want it to start %q and name the quota", msg, want)
	}
	listed(t, r, "ordinary", "o4")
	if st, _ := r.Peek(tenantReq("ordinary", "o4").Key); st.Listing == nil {
		t.Errorf("the ordinary namespace's new server: %+v, want listed beside the hostile namespace at its quota", st)
	}
}

// TestRefresherTenantBytes: the listings' bytes are shared the same way:
// a namespace whose listings are large gives up its own, least recently
// used first, before any of a namespace that holds less; the ordinary
// namespace's small listings survive the hostile one's large ones, which
// before were evicted least recently used first whoever owned them.
func TestRefresherTenantBytes(t *testing.T) {
	s := newServers()
	r, _ := start(t, s, clocktesting.NewFakePassiveClock(t0), Options{MaxBytes: 10_000, MaxListingBytes: 3000})
	listed(t, r, "ordinary", "o1", "o2")
	big := `{"type":"object","description":"` + strings.Repeat("x", 2400) + `"}`
	s.set(func() {
		for i := range 10 {
			s.schema[fmt.Sprintf("h%d", i)] = big
		}
	})
	for i := range 10 {
		listed(t, r, "hostile", fmt.Sprintf("h%d", i))
	}
	for _, u := range []string{"o1", "o2"} {
		if st, ok := r.Peek(tenantReq("ordinary", u).Key); !ok || st.Listing == nil {
			t.Errorf("the ordinary namespace's listing of %s was dropped for the hostile namespace's large listings", u)
		}
	}
	if st := r.Stats(); st.Bytes > 10_000 {
		t.Errorf("%d bytes of listings kept, want at most 10000", st.Bytes)
	}
	if st, _ := r.Peek(tenantReq("hostile", "h9").Key); st.Listing == nil {
		t.Errorf("the hostile namespace's last listing was dropped, want its oldest ones dropped first")
	}
	if st, _ := r.Peek(tenantReq("hostile", "h0").Key); st.Listing != nil {
		t.Errorf("the hostile namespace's first listing is still kept past the byte bound")
	}
}

// TestRefresherTenantFullError: the quota's error is a TenantFullError,
// not ErrFull (the catalog being busy, which a caller waits out): it is
// the namespace's own to fix. A server of that namespace forgotten for
// Idle frees its place.
func TestRefresherTenantFullError(t *testing.T) {
	s := newServers()
	clk := clocktesting.NewFakePassiveClock(t0)
	r, _ := start(t, s, clk, Options{MaxEntriesPerTenant: 2, Idle: time.Minute})
	listed(t, r, "ns", "a", "b")
	st := r.Get(tenantReq("ns", "c"))
	var full *TenantFullError
	if !errors.As(st.Err, &full) || errors.Is(st.Err, ErrFull) || full.Tenant != "ns" || full.Max != 2 || full.URL != "c" {
		t.Fatalf("a third server: %+v, want a TenantFullError of ns at 2 naming c, not ErrFull", st)
	}
	if st := r.Get(tenantReq("other", "c")); st.Err != nil {
		t.Errorf("another namespace's server: %v, want a place", st.Err)
	}
	clk.SetTime(t0.Add(30 * time.Second))
	r.Get(tenantReq("ns", "a")) // b is not asked about again
	clk.SetTime(t0.Add(80 * time.Second))
	if st := r.Get(tenantReq("ns", "c")); st.Err != nil {
		t.Errorf("after b was forgotten: %v, want c given its place", st.Err)
	}
}
