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

package loop

import (
	"fmt"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Budgets that hold across a delegation tree (docs/architecture.md §5, §14). A run
// reserves what a child may spend — model requests (maxSteps), tool calls,
// tokens, and runs of the tree (maxRuns) — out of what is left of its own
// limits after its usage and the reservations its other children hold, in
// the very commit of the delegation call's intent, before the child exists
// (the entry in status.children). The child's limits are that reservation
// (spec.delegation.limits), so each ancestor's remainder bounds it
// transitively. When the child ends its reservation is released and its
// actual usage charged instead (charge, once per child). The run's own
// gates count what its children hold, so the sum over a tree never
// exceeds the root's limits: a run's usage (its ledger, which its children
// are charged into) plus what it holds for live children stays within its
// limits, and what it holds for a child is the child's limit.

// holding sums the reservations of the children that are not settled.
type holding struct{ steps, toolCalls, tokens, runs int64 }

// held is what the run's live children (and those being withdrawn) hold.
// Every such child also holds one run of the tree: itself.
func held(st *Status) holding {
	var h holding
	for i := range st.Children {
		e := &st.Children[i]
		if e.Charged {
			continue
		}
		h.runs++
		r := e.Reserved
		if r == nil {
			continue // recorded by a version that reserved nothing
		}
		if r.MaxSteps != nil {
			h.steps += int64(*r.MaxSteps)
		}
		if r.MaxToolCalls != nil {
			h.toolCalls += int64(*r.MaxToolCalls)
		}
		if r.MaxTokens != nil {
			h.tokens += *r.MaxTokens
		}
		if r.MaxRuns != nil {
			h.runs += int64(*r.MaxRuns)
		}
	}
	return h
}

// stepsUsed is what counts against maxSteps before the next model request:
// the run's own steps, the MCP sampling requests its model answered
// (mcpsample.go) and the requests its children were charged. A child's
// sampling requests count against its own maxSteps — the reservation its
// parent made for it — and reach its parent in childRequests.
func stepsUsed(st *Status) int64 {
	return int64(st.Cursor.Step) + st.Ledger.SamplingRequests + st.Ledger.ChildRequests
}

// tokensUsed is the tokens of the run and of the children charged to it.
func tokensUsed(st *Status) int64 { return st.Ledger.PromptTokens + st.Ledger.CompletionTokens }

// budget is what a run may still reserve for new children; nil: no
// ancestor bounds that kind.
type budget struct {
	steps, toolCalls, tokens *int64
	runs                     int64
	depth                    int32
	lim                      exagentv1.LimitsSpec
	h                        holding
	// usedSteps and usedRuns are what the messages report.
	usedSteps, usedRuns int64
}

// freeBudget is what the run may reserve for children at a batch: its
// limits less its usage and what its children hold. Tool calls not begun
// yet of the step count as used (they may be begun later in the batch);
// one model request is kept for the run itself, to read the batch's
// results.
func freeBudget(st *Status, env *Env) *budget {
	lim := env.limits()
	b := &budget{lim: lim, h: held(st), depth: env.depthLeft() - 1,
		usedSteps: stepsUsed(st) + 1, usedRuns: st.Ledger.Runs} // at a batch the step's own request was made
	if m := lim.MaxSteps; m != nil {
		v := int64(*m) - b.usedSteps - b.h.steps - 1
		b.steps = &v
	}
	if m := lim.MaxToolCalls; m != nil {
		v := int64(*m) - st.Ledger.ToolCalls - b.h.toolCalls - unbegun(st)
		b.toolCalls = &v
	}
	if m := lim.MaxTokens; m != nil {
		v := *m - tokensUsed(st) - b.h.tokens
		b.tokens = &v
	}
	b.runs = int64(*lim.MaxRuns) - st.Ledger.Runs - b.h.runs
	return b
}

// unbegun counts the calls of the current step that may still be admitted
// (and charged as tool calls).
func unbegun(st *Status) int64 {
	n := int64(0)
	for _, i := range stepCalls(st) {
		c := &st.Calls[i]
		switch c.State {
		case exagentv1.CallProposed, exagentv1.CallPending, exagentv1.CallAllowed, exagentv1.CallApproved:
			if c.IdempotencyKey == "" {
				n++
			}
		}
	}
	return n
}

// reserve takes one child's share — an equal part of what is left among
// the n children still to be reserved in this batch, at most the child
// Agent's own limits — or says why nothing can be (nothing is taken then).
// share is an equal part of free among k, at least one while one is
// left: a child needs one model request (or token) to do anything, and
// what is scarce goes to the calls first in the model's order.
func share(free, k int64) int64 {
	if free < 1 {
		return 0
	}
	return max(free/k, 1)
}

func (b *budget) reserve(own exagentv1.LimitsSpec, n int) (exagentv1.DelegatedLimits, string) {
	k := int64(max(n, 1))
	out := exagentv1.DelegatedLimits{MaxDepth: new(b.depth)}
	var steps, toolCalls, tokens int64
	if b.steps != nil {
		steps = share(*b.steps, k)
		if own.MaxSteps != nil {
			steps = min(steps, int64(*own.MaxSteps))
		}
		if steps < 1 {
			return out, fmt.Sprintf("%s: limit maxSteps (%d) leaves no model request for a child run: %d made by this "+
				"run and its child runs, %d reserved for other child runs, one kept for this run to read the answer. "+
				"The call was not run.", exagentv1.ReasonLimitExceeded, *b.lim.MaxSteps, b.usedSteps, b.h.steps)
		}
		out.MaxSteps = new(int32(steps))
	}
	if b.toolCalls != nil {
		toolCalls = max(*b.toolCalls, 0) / k
		if own.MaxToolCalls != nil {
			toolCalls = min(toolCalls, int64(*own.MaxToolCalls))
		}
		out.MaxToolCalls = new(int32(toolCalls))
	}
	if b.tokens != nil {
		tokens = share(*b.tokens, k)
		if own.MaxTokens != nil {
			tokens = min(tokens, *own.MaxTokens)
		}
		if tokens < 1 {
			return out, fmt.Sprintf("%s: limit maxTokens (%d) leaves no tokens for a child run (%d reserved for other "+
				"child runs). The call was not run.", exagentv1.ReasonLimitExceeded, *b.lim.MaxTokens, b.h.tokens)
		}
		out.MaxTokens = &tokens
	}
	if b.runs < 1 {
		return out, fmt.Sprintf("%s: limit maxRuns (%d) of the delegation tree is used up: %d child runs were created "+
			"below this run and %d are held by its live child runs. The call was not run.",
			exagentv1.ReasonLimitExceeded, *b.lim.MaxRuns, b.usedRuns, b.h.runs)
	}
	// The child itself takes one run; what it may create below it is a
	// share of the rest.
	sub := min(max(b.runs-k, 0)/k, int64(own.Runs()))
	out.MaxRuns = new(int32(sub))
	if b.steps != nil {
		*b.steps -= steps
	}
	if b.toolCalls != nil {
		*b.toolCalls -= toolCalls
	}
	if b.tokens != nil {
		*b.tokens -= tokens
	}
	b.runs -= 1 + sub
	return out, ""
}

// reserveChildren journals, for each delegation call about to be begun
// that has no entry in status.children yet, the child's deterministic
// name and its reservation (an intent begun again keeps its entry: same
// child, same reservation). It returns the calls for which nothing is
// left, with why: those fail before any IO, and the model is told.
//
// A call whose entry is settled was withdrawn while it waited to be begun
// again (asked again, its tool removed): its child was ended, or never
// came to be, and its reservation is released. It is never begun again —
// the child would run on a budget nobody holds: it fails, and the model
// may ask anew.
func reserveChildren(st *Status, env *Env, ready []int) map[string]string {
	refused := map[string]string{}
	var fresh []int
	for _, i := range ready {
		c := &st.Calls[i]
		if !env.isDelegation(c.Tool) {
			continue
		}
		switch j := findChild(st, c.ID); {
		case j < 0:
			fresh = append(fresh, i)
		case st.Children[j].Charged:
			refused[c.ID] = fmt.Sprintf("%s: the child run %s of this call was withdrawn (%s) before the call was begun "+
				"again; it is not begun again. Ask for the work in a new call.", exagentv1.ReasonDelegationWithdrawn,
				st.Children[j].Name, st.Children[j].Message)
		}
	}
	if len(fresh) == 0 {
		return refused
	}
	b := freeBudget(st, env)
	for j, i := range fresh {
		c := &st.Calls[i]
		if len(st.Children) >= maxChildren {
			refused[c.ID] = fmt.Sprintf("%s: this run already delegated to %d child runs, the most one run may have. "+
				"The call was not run.", exagentv1.ReasonLimitExceeded, maxChildren)
			continue
		}
		agent := env.specs[c.Tool].Agent.AgentRef.Name
		res, why := b.reserve(env.childLimits(agent), len(fresh)-j)
		if why != "" {
			refused[c.ID] = why
			continue
		}
		st.Children = append(st.Children, exagentv1.ChildRun{
			Name: childNameFor(env, c), CallID: c.ID, Agent: agent, Reserved: &res,
		})
	}
	return refused
}

// childNameFor is the name journaled for a delegation call's child. A call
// that already has an idempotency key but no entry was begun by a version
// that journaled no child name and named children after the call id
// alone: a child it may have created has that name, so the call keeps it.
func childNameFor(env *Env, c *exagentv1.ToolCall) string {
	if c.IdempotencyKey != "" {
		return LegacyChildName(env.in.RunName, c.ID)
	}
	return ChildName(env.in.RunName, env.in.RunUID, c.ID)
}

// refuseChild closes a delegation call for which nothing could be
// reserved: a failed outcome the model sees, no IO, no tool call charged.
func refuseChild(c *exagentv1.ToolCall, why string) {
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{Result: bound(why, maxContent)}
}
