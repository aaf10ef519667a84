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
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"

	"github.com/exagent-io/exagent/cmd/kubectl-approve/app/ui"
)

// The approver's page in a real browser: headless Chromium (installed by
// hack/chromium.sh, which make test runs), driven with chromedp, against
// the page served in this process as `kubectl approve ui` serves it —
// the person's certificate kubeconfig, the plugin's own Decider — and the
// cluster of cluster_test.go.

// browserTimeout bounds one browser step; generous, the machine is shared.
const browserTimeout = 2 * time.Minute

// startPage serves the approver's page for namespace ns as user and
// returns the URL it prints (with its one-session token).
func startPage(t *testing.T, user, ns string) string {
	t.Helper()
	cluster()
	cfg := &ui.Config{Address: "127.0.0.1:0", Auth: ui.AuthKubeconfig, Namespace: ns, REST: people[user].rest,
		Decide: uiDecide, Explain: uiExplain, DecisionTimeout: browserTimeout, Log: logr.Discard()}
	s, err := ui.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the page of %s: %v", user, err)
		}
	})
	return s.URL(ln.Addr())
}

// pageURL is path on the page at base (its token dropped: the browser
// holds the session cookie by then).
func pageURL(base, path string) string {
	base, _, _ = strings.Cut(base, "?")
	return strings.TrimSuffix(base, "/") + path
}

// chromiumPath is the browser hack/chromium.sh installed (or EXAGENT_CHROMIUM).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, c := range []string{os.Getenv("EXAGENT_CHROMIUM"), "chromium", "chromium-browser"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	t.Fatal("Chromium is not installed: run hack/chromium.sh (make test does), or set EXAGENT_CHROMIUM")
	return ""
}

// browser starts a headless Chromium with a profile of its own (cookies
// are not shared between people) and returns a tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)), chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // the tests run as root
		chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// do runs steps in ctx within browserTimeout.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, browserTimeout)
	defer cancel()
	if _, err := chromedp.Run(c, chromedp.Steps(steps...)); err != nil {
		where, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s (at %s): %v", what, where, err)
	}
}

// get runs one action that must succeed and returns its value.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, browserTimeout)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		where, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s (at %s): %v", what, where, err)
	}
	return v
}

// text is the textContent of the first node sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return get(t, ctx, "reading "+sel, chromedp.TextContent(chromedp.CSS(sel)))
}

// eval evaluates js in the page, awaiting a promise.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	return get(t, ctx, "evaluating "+js, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
}

// markStale marks the page shown now, so that waitAnswered waits for the
// next one (a POST's answer), not for what this one already shows.
func markStale() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`document.body.dataset.stale = "1", true`)(ctx, tg)
		return err
	})
}

// waitAnswered waits for the page a POST answered with: a page with its
// result on top, or a refusal before it (plain text).
func waitAnswered() chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS("body:not([data-stale]) main .flash, body:not([data-stale]) > pre"))
}
