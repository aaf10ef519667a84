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

package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/bounded"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

const (
	// pagingRSSBound is the manager's peak resident set this test allows
	// with the paging servers' listings under way: its idle size (~80 MiB)
	// and a few listings of at most 4 MiB read each, far under the 512 MiB
	// limit the chart gives the manager.
	pagingRSSBound = 256 << 20
	// pagingRSSKill: past it the manager is killed at once (the test has
	// failed; what is left is to spare the machine): before the listing
	// was bounded while read, each listing piled up to 4 GiB.
	pagingRSSKill = 1 << 30
	// pagingAgentsPerNamespace, in each of two namespaces (two tenants,
	// each with its half of the refresher's 8 slots): every slot lists a
	// paging server at once.
	pagingAgentsPerNamespace = 4
)

// TestMCPPagingServerManagerMemory is issue 37's memory test of a paging
// hostile MCP server, on cmd/manager as a separate process (the figure is
// its /proc VmHWM, as a container's limit sees it): two namespaces of four
// Agents each name MCP servers whose tools/list never ends, each page one
// tool — one namespace's bulk in its description, the other's in its
// input schema as tiny properties (what costs the most to decode per
// byte) — each Agent on a URL of its own, so that all eight of the
// refresher's slots list at once. Pages are just under 8 MiB (each passes
// the bound on one answer; the first crosses the 4 MiB listing bound), or
// just under 4 MiB (the first is read and decoded whole, the most a
// listing can cost). Every Agent ends Ready=False MCPServerUnavailable
// naming the listing bound, no listing asks for a page past the one that
// crossed it, and the manager's peak RSS stays under pagingRSSBound over
// a few rounds of listings. Before the bound held while reading, each
// listing read pages up to 512 tools: the manager passed 1 GiB in seconds.
func TestMCPPagingServerManagerMemory(t *testing.T) {
	tmp := t.TempDir()
	bin, err := (&procs.Builder{Dir: tmp}).Build(procs.ManagerImage)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	if err := procs.WriteKubeconfig(kubeconfig, env().Config); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		pageBytes int
	}{
		// The server: every page passes the bound on one answer
		// (8 MiB) and crosses the listing's at once.
		{"8MiB-pages", mcptest.DefaultPageBytes},
		// The most a listing costs within its bound: a first page just
		// under it, decoded whole, then the second crosses it.
		{"pages-under-the-listing-bound", int(mcplist.DefaultMaxListingBytes) - 16<<10},
	} {
		t.Run(tc.name, func(t *testing.T) { testPagingMemory(t, bin, kubeconfig, tc.pageBytes) })
	}
}

func testPagingMemory(t *testing.T, bin, kubeconfig string, pageBytes int) {
	servers := map[mcptest.PagingShape]*mcptest.Paging{}
	var hs []*harness
	var agents []types.NamespacedName
	for _, shape := range []mcptest.PagingShape{mcptest.PagingDescription, mcptest.PagingSchema} {
		srv := mcptest.StartPaging(pageBytes, shape)
		t.Cleanup(srv.Close)
		servers[shape] = srv
		hs = append(hs, newHarness(t))
	}
	p, err := procs.StartManager(procs.ManagerSpec{
		Name: "manager paging", Bin: bin, Kubeconfig: kubeconfig,
		Args: []string{
			"--enable-webhooks=false", "--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false",
			"--egress-allow-cidrs=127.0.0.1/32",
			// Only this test's namespaces: the envtest is shared.
			"--watch-namespaces", hs[0].ns + "," + hs[1].ns,
		},
		Env: childEnv(), Log: filepath.Join(t.TempDir(), "manager.log"), ParentDeath: syscall.SIGKILL,
		Ready: procs.Workers(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	idle, err := p.Memory()
	if err != nil {
		t.Fatal(err)
	}
	watch := watchRSS(t, p)

	for i, shape := range []mcptest.PagingShape{mcptest.PagingDescription, mcptest.PagingSchema} {
		h := hs[i]
		for j := range pagingAgentsPerNamespace {
			name := fmt.Sprintf("paging-%d", j)
			h.createAgent(name, exagentv1.AgentSpec{
				Model: fixture.Scripted(fixture.TextTurn("never reached")),
				Tools: []exagentv1.ToolSpec{{Name: "pages", MCP: &exagentv1.MCPTool{URL: fmt.Sprintf("%s/%d", servers[shape].URL, j),
					Import: &exagentv1.MCPImport{}}}},
			})
			agents = append(agents, types.NamespacedName{Namespace: h.ns, Name: name})
		}
	}

	// The description's bulk passes the bytes' bound; the schema's tiny
	// properties pass the bound on JSON values first, a quarter in.
	wants := map[string]string{
		hs[0].ns: fmt.Sprintf("the listing (every page's answer together) is over the %s bound", bounded.Size(mcplist.DefaultMaxListingBytes)),
		hs[1].ns: "the listing (every page's answer together) has more than 262144 JSON values",
	}
	for _, key := range agents {
		want := wants[key.Namespace]
		var last string
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := watch.failed(); err != nil {
				return false, err
			}
			var a exagentv1.Agent
			if err := env().Client.Get(ctx, key, &a); err != nil {
				return false, nil
			}
			c := meta.FindStatusCondition(a.Status.Conditions, exagentv1.ConditionReady)
			if c == nil {
				return false, nil
			}
			last = fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
			return c.Status == metav1.ConditionFalse && c.Reason == exagentv1.ReasonMCPServerUnavailable && strings.Contains(c.Message, want), nil
		})
		if err != nil {
			t.Fatalf("Agent %s: %s (%v); want Ready=False %s naming %q\n%s", key, last, err, exagentv1.ReasonMCPServerUnavailable, want, p.Tail())
		}
	}
	// More rounds: a failing server is asked again with backoff (1 s, 2 s,
	// 4 s, …) while its Agents are rechecked; the peak is over all of them.
	rounds := 3 * len(agents)
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		if err := watch.failed(); err != nil {
			return false, err
		}
		n := 0
		for _, srv := range servers {
			_, _, lists, _ := srv.Served()
			n += lists
		}
		return n >= rounds, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d listings of the paging servers: %v", rounds, err)
	}
	peak := watch.stop()

	for shape, srv := range servers {
		pages, deepest, lists, written := srv.Served()
		t.Logf("paging server (shape %d, pages of %d KiB): %d listings, %d pages served, %d deep at most, %d MiB written",
			shape, pageBytes>>10, lists, pages, deepest, written>>20)
		if most := int(mcplist.DefaultMaxListingBytes)/pageBytes + 1; deepest > most {
			t.Errorf("a listing of the paging server (shape %d) asked for %d pages, want at most %d: the last crosses the %s bound",
				shape, deepest, most, bounded.Size(mcplist.DefaultMaxListingBytes))
		}
	}
	t.Logf("manager process %d: RSS idle %d MiB, peak %d MiB with %d Agents on paging MCP servers (bound %d MiB)",
		p.Pid(), idle.RSS>>20, peak>>20, len(agents), pagingRSSBound>>20)
	if peak > pagingRSSBound {
		t.Errorf("the manager's peak RSS was %d MiB with %d Agents on paging MCP servers (idle %d MiB), want under %d MiB",
			peak>>20, len(agents), idle.RSS>>20, pagingRSSBound>>20)
	}
}

// rssWatch samples a process's resident set every 100 ms; the kernel's
// high-water mark (VmHWM) is the peak, which no sample can miss. Past
// pagingRSSKill it kills the process.
type rssWatch struct {
	done chan struct{}
	wg   sync.WaitGroup

	mu   sync.Mutex
	peak int64
	err  error
}

func watchRSS(t *testing.T, p *procs.Process) *rssWatch {
	w := &rssWatch{done: make(chan struct{})}
	sample := func() bool {
		m, err := p.Memory()
		w.mu.Lock()
		defer w.mu.Unlock()
		switch {
		case err != nil:
			w.err = fmt.Errorf("reading the manager's memory: %w", err)
		case m.Peak > pagingRSSKill:
			p.Kill()
			w.err = fmt.Errorf("the manager's RSS reached %d MiB, past %d MiB: killed", m.Peak>>20, pagingRSSKill>>20)
		}
		w.peak = max(w.peak, m.Peak)
		return w.err == nil
	}
	w.wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for sample() {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	})
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *rssWatch) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// stop ends the sampling and returns the peak.
func (w *rssWatch) stop() int64 {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}
