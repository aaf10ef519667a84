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

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/exagent-io/exagent/internal/testing/procs"
)

// The approver's page (kubectl approve ui) tested in a real browser:
// headless Chromium, installed by hack/chromium.sh (make test runs it),
// driven with chromedp against the shared cluster, the plugin started as
// its own process with a certificate user's kubeconfig.

// browserTimeout bounds one browser step; generous, as everything on
// this machine is shared.
const browserTimeout = 2 * time.Minute

// chromiumPath is the browser hack/chromium.sh installed (or
// EXAGENT_CHROMIUM).
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

// uiURL matches the URL the plugin prints.
var uiURL = regexp.MustCompile(`https?://127\.0\.0\.1:\d+/\S*`)

// startUI starts `kubectl approve ui --port 0 ARGS…` as user and returns
// the URL it printed (with its token, in local mode).
func startUI(t *testing.T, user string, args ...string) string {
	t.Helper()
	name := "ui-" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + "-" + user
	p, err := procs.Start(procs.Spec{Name: name, Bin: s.build.Path("kubectl-approve"), Args: append([]string{"ui"}, args...),
		Env: s.env(t, user), Log: filepath.Join(s.work, name+".log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(syscall.SIGTERM, 20*time.Second); err != nil && !procs.IsSignalExit(err) {
			t.Errorf("stopping %s: %v\n%s", name, err, p.Tail())
		}
	})
	if err := p.WaitReady(time.Minute, procs.Logged("Serving the approver's page")); err != nil {
		t.Fatalf("%s did not start: %v\n%s", name, err, p.Tail())
	}
	b, err := os.ReadFile(p.Log)
	if err != nil {
		t.Fatal(err)
	}
	u := uiURL.FindString(string(b))
	if u == "" {
		t.Fatalf("%s printed no URL:\n%s", name, b)
	}
	return u
}

// browser starts a headless Chromium with a profile of its own (cookies
// are not shared between tests or people) and returns a tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // the tests run as root
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// tab opens another tab of the same browser (same cookies).
func tab(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	c, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	// The first run opens the tab, which lives as long as that run's
	// context: never one with a timeout.
	if err := chromedp.Do(c); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return c
}

// do runs steps in ctx within browserTimeout.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if _, err := get(ctx, chromedp.Steps(steps...)); err != nil {
		where, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s (at %s): %v", what, where, err)
	}
}

// get runs one action within browserTimeout and returns its value.
func get[T any](ctx context.Context, a chromedp.Action[T]) (T, error) {
	c, cancel := context.WithTimeout(ctx, browserTimeout)
	defer cancel()
	return chromedp.Run(c, a)
}

// mustGet runs one action that must succeed and returns its value.
func mustGet[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := get(ctx, a)
	if err != nil {
		where, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s (at %s): %v", what, where, err)
	}
	return v
}

// text is the text of the first node the CSS selector sel matches: its
// textContent, which does not depend on layout (innerText of an inbox
// card the browser has not laid out yet — content-visibility: auto — is
// empty).
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return mustGet(t, ctx, "reading "+sel, chromedp.TextContent(chromedp.CSS(sel)))
}

// eval evaluates js in the page, awaiting a promise.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	return mustGet(t, ctx, "evaluating "+js, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
}

// screenshot writes the page into bin/ui-screenshots (not committed;
// docs/images holds the two docs/ui.md shows).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := mustGet(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	dir := filepath.Join(s.root, "bin", "ui-screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
