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
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestBuiltinClientCacheBounded: the per-identity clients are an LRU of
// DefaultBuiltinClients (identities are ServiceAccount names Agent authors
// pick), an identity in use stays, and an idle one goes at the next call.
// Building a client sends nothing, so no apiserver is needed.
func TestBuiltinClientCacheBounded(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := NewBuiltins(&rest.Config{Host: "https://127.0.0.1:1"}, nil)
	b.clock = clk
	if _, err := b.clientsFor("team", "busy"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 * DefaultBuiltinClients {
		if _, err := b.clientsFor(fmt.Sprint("tenant-", i), "default"); err != nil {
			t.Fatal(err)
		}
		if i%16 == 0 {
			if _, err := b.clientsFor("team", "busy"); err != nil { // in use
				t.Fatal(err)
			}
		}
	}
	if got := b.clients.Len(); got != DefaultBuiltinClients {
		t.Errorf("cached clients = %d, want the bound %d", got, DefaultBuiltinClients)
	}
	if !b.clients.Contains("system:serviceaccount:team:busy") {
		t.Error("the identity in use was evicted")
	}
	clk.SetTime(clk.Now().Add(BuiltinClientIdle + time.Second))
	if _, err := b.clientsFor("team", "busy"); err != nil {
		t.Fatal(err)
	}
	if got := b.clients.Len(); got != 1 {
		t.Errorf("cached clients after %s idle = %d, want 1 (the one just used)", BuiltinClientIdle, got)
	}
}
