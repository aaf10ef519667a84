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
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// greedyModel is an OpenAI-compatible endpoint that never stops: every
// answer asks for one more poke and reports tokensEach tokens. It counts
// the tokens it handed out: the oracle of what a tree really used.
type greedyModel struct {
	srv      *httptest.Server
	requests atomic.Int64
}

const tokensEach = 125 // 100 prompt + 25 completion

func newGreedyModel(t *testing.T) *greedyModel {
	gm := &greedyModel{}
	gm.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n := gm.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000, "model": "greedy",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{
				"role": "assistant", "content": nil,
				"tool_calls": []any{map[string]any{"id": fmt.Sprintf("call_%d", n), "type": "function",
					"function": map[string]any{"name": "poke", "arguments": `{}`}}},
			}}},
			"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 25, "total_tokens": tokensEach},
		})
	}))
	t.Cleanup(gm.srv.Close)
	return gm
}

// TestTreeBudgetFanOut: a root limited to 2000 tokens and 20 tool calls
// delegates 8 calls at once to an Agent whose model never stops asking
// for more. Each child is given a share reserved out of the root's
// remainder (at most its own Agent's limits), so the tree as a whole —
// counted at the model endpoint and the tool server, not from the
// ledgers — never passes the root's limits; every child ends
// LimitExceeded, and the root's ledger is the tree's. (Before
// reservations each child had the root's whole remainder: the tree used
// about six times the root's tokens and five times its tool calls.)
func TestTreeBudgetFanOut(t *testing.T) {
	const maxTokens, maxToolCalls, fan = 2000, 20, 8
	tests := map[string]struct {
		own        exagentv1.LimitsSpec // the child Agent's own limits
		wantShare  int64                // tokens each child is given
		wantRoot   exagentv1.RunPhase
		wantInRoot string
	}{
		"children that want everything share what the root has": {
			wantShare: maxTokens / fan, wantRoot: exagentv1.PhaseFailed, wantInRoot: "maxTokens",
		},
		"children limited by their own Agent leave the rest to the root": {
			own:       exagentv1.LimitsSpec{MaxTokens: new(int64(tokensEach))},
			wantShare: tokensEach, wantRoot: exagentv1.PhaseSucceeded, wantInRoot: "the model gave its final answer",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			ts := newToolServer(t)
			gm := newGreedyModel(t)
			h.startManager(controllers.Options{})
			if err := h.c.Create(context.Background(), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "greedy", Namespace: h.ns}, StringData: map[string]string{"apiKey": "sk-test"},
			}); err != nil {
				t.Fatal(err)
			}
			var calls []exagentv1.ScriptToolCall
			for i := range fan {
				calls = append(calls, exagentv1.ScriptToolCall{ID: fmt.Sprintf("w%d", i), Name: "work",
					Arguments: fixture.Raw(map[string]any{"input": fmt.Sprintf("part %d", i)})})
			}
			h.createAgent("boss", exagentv1.AgentSpec{
				Instructions: "You split the work.",
				Model:        fixture.Scripted(exagentv1.ScriptTurn{ToolCalls: calls}, fixture.TextTurn("all parts done")),
				Tools:        []exagentv1.ToolSpec{fixture.AgentTool("work", "greedy")},
				Policy:       allowAll,
				Limits:       exagentv1.LimitsSpec{MaxTokens: new(int64(maxTokens)), MaxToolCalls: new(int32(maxToolCalls))},
			})
			h.createAgent("greedy", exagentv1.AgentSpec{
				Instructions: "You never stop.",
				Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "greedy", BaseURL: gm.srv.URL + "/v1",
					APIKeySecretRef: &exagentv1.SecretKeySelector{Name: "greedy", Key: "apiKey"}},
				Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("poke", ts.url("/poke"))},
				Policy: allowAll,
				Limits: tc.own,
			})
			h.createRun("fan", "boss")
			root := h.waitRun("fan", "the end", func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })

			tokens := gm.requests.Load() * tokensEach
			toolCalls := int64(fan) + int64(len(ts.journal())) // the root's delegations and the children's pokes
			if tokens > maxTokens || toolCalls > maxToolCalls {
				t.Errorf("the tree used %d tokens and %d tool calls; the root allows %d and %d", tokens, toolCalls, maxTokens, maxToolCalls)
			}
			children := h.treeRuns("fan")
			if len(children) != fan {
				t.Fatalf("tree has %d children, want %d", len(children), fan)
			}
			for _, c := range children {
				if c.Status.Phase != exagentv1.PhaseFailed || c.Status.Reason != exagentv1.ReasonLimitExceeded {
					t.Errorf("child %s = %s (%s: %s), want Failed LimitExceeded", c.Name, c.Status.Phase, c.Status.Reason, c.Status.Message)
				}
				if m := c.Spec.Delegation.Limits.MaxTokens; m == nil || *m != tc.wantShare {
					t.Errorf("child %s was given %s tokens, want %d", c.Name, deref(m), tc.wantShare)
				}
			}
			l := root.Status.Ledger
			if got := l.PromptTokens + l.CompletionTokens; got != tokens || l.ToolCalls != toolCalls || l.Runs != fan {
				t.Errorf("root ledger = %d tokens, %d tool calls, %d runs; want the tree's %d, %d, %d", got, l.ToolCalls, l.Runs,
					tokens, toolCalls, fan)
			}
			if root.Status.Phase != tc.wantRoot || !strings.Contains(root.Status.Message, tc.wantInRoot) {
				t.Errorf("root = %s (%s), want %s with %q", root.Status.Phase, root.Status.Message, tc.wantRoot, tc.wantInRoot)
			}
		})
	}
}

func deref(p *int64) string {
	if p == nil {
		return "no"
	}
	return fmt.Sprint(*p)
}

// TestTreeMaxRuns: a tree may create limits.maxRuns runs in all. An Agent
// that delegates twice to itself at every level, with maxRuns 5, makes
// exactly 5 runs below the root; the delegation calls past it fail
// LimitExceeded and every run's model goes on.
func TestTreeMaxRuns(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})
	h.createAgent("hydra", exagentv1.AgentSpec{
		Model: fixture.Scripted(exagentv1.ScriptTurn{ToolCalls: []exagentv1.ScriptToolCall{
			{ID: "a", Name: "again", Arguments: fixture.Raw(map[string]any{"input": "left"})},
			{ID: "b", Name: "again", Arguments: fixture.Raw(map[string]any{"input": "right"})},
		}}, fixture.TextTurn("done")),
		Tools:  []exagentv1.ToolSpec{fixture.AgentTool("again", "hydra")},
		Policy: allowAll,
		Limits: exagentv1.LimitsSpec{MaxDepth: new(int32(4)), MaxRuns: new(int32(5))},
	})
	h.createRun("heads", "hydra")
	root := h.waitPhase("heads", exagentv1.PhaseSucceeded)
	if runs := h.treeRuns("heads"); len(runs) != 5 {
		t.Errorf("tree has %d runs below the root, want maxRuns 5", len(runs))
	}
	if root.Status.Ledger.Runs != 5 {
		t.Errorf("root ledger runs = %d, want 5", root.Status.Ledger.Runs)
	}
	refused := 0
	for _, r := range append(h.treeRuns("heads"), *root) {
		if r.Status.Phase != exagentv1.PhaseSucceeded {
			t.Errorf("run %s = %s (%s), want Succeeded", r.Name, r.Status.Phase, r.Status.Message)
		}
		if historyContains(&r, "maxRuns") {
			refused++
		}
	}
	if refused == 0 {
		t.Error("no run was told that maxRuns refused a delegation")
	}
}
