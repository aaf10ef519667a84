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
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// colorScheme emulates prefers-color-scheme (light or dark).
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}

// TestUIAccessible: the inbox and a run page are usable with the keyboard
// (the skip link first, the run reached and a decision made with Tab and
// Enter alone), readable at 200 % zoom (no horizontal scrolling at half
// the width) and follow the system's light or dark setting.
func TestUIAccessible(t *testing.T) {
	s.up(t)
	ns := namespace(t, "e2e-ui-a11y")
	bindApprovers(t, ns)
	srv := newEffectServer(t, false)
	must(t, "", httpAgent(ns, "payments", srv.URL, "Ask", "10s")+"---\n"+runYAML(ns, "pay", "payments"), "apply", "-f", "-")
	waitPaused(t, ns, "pay")
	base := startUI(t, "alice", "--port", "0", "-n", ns)
	b := browser(t)
	do(t, b, "the inbox", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#inbox li")))

	do(t, b, "Tab", chromedp.KeyEvent(kb.Tab))
	if got := eval[string](t, b, `document.activeElement.textContent`); got != "Skip to content" {
		t.Errorf("the first Tab stop is %q, want the skip link", got)
	}
	// Tab to the run's link and follow it with Enter.
	for i := 0; i < 10 && !eval[bool](t, b, `document.activeElement.matches('#inbox a')`); i++ {
		do(t, b, "Tab", chromedp.KeyEvent(kb.Tab))
	}
	do(t, b, "Enter on the run", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS("form.decide textarea")))
	do(t, b, "focus the reason", chromedp.Focus(chromedp.CSS("form.decide textarea")), chromedp.KeyEvent("by keyboard"))
	do(t, b, "Tab to Approve", chromedp.KeyEvent(kb.Tab))
	if got := eval[string](t, b, `document.activeElement.value`); got != "Approve" {
		t.Fatalf("after the reason, Tab reaches %q, want the Approve button", got)
	}
	do(t, b, "Enter on Approve", markStale(), chromedp.KeyEvent(kb.Enter), waitAnswered())
	if got := text(t, b, "body"); !strings.Contains(got, "Applied: approve") {
		t.Fatalf("after Enter on Approve the page reads:\n%.1000s", got)
	}
	if final := waitDone(t, ns, "pay"); final.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s", final.Status.Phase)
	}

	for _, page := range []string{base, runURL(base, ns, "pay")} {
		do(t, b, "200 % zoom", chromedp.EmulateViewport(640, 450, chromedp.EmulateScale(2)), chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("main")))
		if over := eval[bool](t, b, `document.documentElement.scrollWidth > window.innerWidth`); over {
			t.Errorf("%s scrolls sideways at 200 %% zoom", page)
		}
		colors := map[string]string{}
		for _, scheme := range []string{"light", "dark"} {
			do(t, b, scheme, colorScheme(scheme), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("main")))
			colors[scheme] = eval[string](t, b, `getComputedStyle(document.body).backgroundColor`)
		}
		if colors["light"] == colors["dark"] {
			t.Errorf("%s: the same background %s in light and dark", page, colors["light"])
		}
	}
}
