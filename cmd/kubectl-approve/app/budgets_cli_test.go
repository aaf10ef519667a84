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
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// TestBudgetsFromTheCLI: with a budget of one concurrent run, the first
// run waits for a person and the second is held by the budget. A viewer
// sees the budget used up in `budgets` and, in `list`, the approval and,
// after it, the held run with the budget's message.
func TestBudgetsFromTheCLI(t *testing.T) {
	ns := namespace(t, "cli-budget")
	e := cluster()
	srv := newChargeServer(t)
	agent := fixture.MakeAgent("charges", ns).
		Script(fixture.CallTurn("c1", "charge", map[string]any{"amount": 5}), fixture.TextTurn("done")).
		Tool(fixture.HTTPTool("charge", srv.URL)).Policy(fixture.AskPolicy("charge")).Obj()
	if err := e.Client.Create(t.Context(), agent); err != nil {
		t.Fatal(err)
	}
	one := &exagentv1.AgentBudget{ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: ns},
		Spec: exagentv1.AgentBudgetSpec{MaxConcurrentRuns: new(int32(1))}}
	if err := e.Client.Create(t.Context(), one); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(t.Context(), fixture.MakeRun("first", ns).Agent("charges").Input("charge 5").Obj()); err != nil {
		t.Fatal(err)
	}
	waitRun(t, ns, "first", "to wait for approval", paused)
	if err := e.Client.Create(t.Context(), fixture.MakeRun("second", ns).Agent("charges").Input("charge 5").Obj()); err != nil {
		t.Fatal(err)
	}
	held := waitRun(t, ns, "second", "to be held by the budget", func(r *exagentv1.AgentRun) bool {
		return r.Status.Phase == exagentv1.PhaseQueued && r.Status.Reason == exagentv1.ReasonBudgetExhausted
	})
	waitFor(t, "the budget's status to say 1/1", func(ctx context.Context) (bool, error) {
		var b exagentv1.AgentBudget
		err := e.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "one"}, &b)
		return err == nil && len(b.Status.Limits) == 1 && b.Status.Limits[0].Percent == 100, err
	})

	out := mustPlugin(t, "bob", "budgets", "-n", ns)
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(ns) + `\s+one\s+<all>\s+1/1 \(100%\)\s+maxConcurrentRuns$`)
	if !regexp.MustCompile(`^NAMESPACE\s+NAME\s+SELECTOR\s+CONCURRENT\s+EXHAUSTED\n`).MatchString(out) || !row.MatchString(out) {
		t.Errorf("budgets printed:\n%s", out)
	}

	if plain := mustPlugin(t, "bob", "list", "-n", ns); strings.Contains(plain, "held by budget") {
		t.Errorf("plain list reads the held runs (one more request): %s", plain)
	}
	out = mustPlugin(t, "bob", "list", "-n", ns, "--budgets")
	line := "held by budget: second (" + held.Status.Message + ")\n"
	if !strings.Contains(held.Status.Message, "AgentBudget "+ns+"/one: maxConcurrentRuns 1 used 1") {
		t.Errorf("held run's message %q does not name the budget and its spend", held.Status.Message)
	}
	if !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(ns)+`\s+first\s+c1-r1\s+charge\s`).MatchString(out) || !strings.HasSuffix(out, "\n\n"+line) {
		t.Errorf("list printed:\n%s\nwant the approval of first, then %q", out, line)
	}
}
