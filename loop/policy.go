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
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// celCostLimit bounds the work one `when` may do, so a rule cannot stall a
// reconcile; exceeding it is an evaluation failure, hence Ask.
const celCostLimit = 100000

// Policy is a compiled PolicySpec: its rules' `when` expressions are CEL
// programs over `args`, the call's arguments as a JSON object, and `tool`:
// {name, annotations}, where annotations are an mcp tool's hints
// (readOnlyHint, destructiveHint, idempotentHint, openWorldHint, with the
// MCP spec's defaults when the server gave none; empty for other kinds).
// Annotations come from a server the Agent does not control: a rule may
// use them to ask or deny, and if it uses them to allow, that is the
// Agent author's explicit choice — they never allow a call by themselves.
// A rule's tools may end in "*" to match every tool with that prefix
// (e.g. the tools of an mcp import).
type Policy struct {
	spec  exagentv1.PolicySpec
	rules []compiledRule
}

type compiledRule struct {
	name     string
	action   exagentv1.PolicyAction
	tools    map[string]bool
	prefixes []string
	all      bool
	prg      cel.Program
	// What an approver may do with a call the rule asks about (approve.go).
	editable *bool
	sticky   *bool
	quorum   *exagentv1.Quorum
	onExpire exagentv1.OnExpire
}

// CompilePolicy validates and compiles p. The admission webhook calls it to
// reject a bad `when` before any run uses it; the error names the rule index.
func CompilePolicy(p exagentv1.PolicySpec) (*Policy, error) {
	if !validAction(p.Default, true) {
		return nil, fmt.Errorf("policy.default: %q is not Allow, Ask or Deny", p.Default)
	}
	if p.OnDeny != "" && p.OnDeny != exagentv1.OnDenyStop && p.OnDeny != exagentv1.OnDenyContinue {
		return nil, fmt.Errorf("policy.onDeny: %q is not Stop or Continue", p.OnDeny)
	}
	if p.OnExpire != "" && p.OnExpire != exagentv1.OnExpireStop && p.OnExpire != exagentv1.OnExpireContinue {
		return nil, fmt.Errorf("policy.onExpire: %q is not Stop or Continue", p.OnExpire)
	}
	env, err := cel.NewEnv(
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("tool", cel.MapType(cel.StringType, cel.DynType)),
		cel.CrossTypeNumericComparisons(true),
	)
	if err != nil {
		return nil, fmt.Errorf("policy: cel environment: %w", err)
	}
	out := &Policy{spec: *p.DeepCopy()}
	for i, r := range p.Rules {
		cr := compiledRule{name: r.Name, action: r.Action, tools: map[string]bool{},
			editable: r.Editable, sticky: r.Sticky, quorum: r.Quorum.DeepCopy(), onExpire: r.OnExpire}
		if cr.name == "" {
			cr.name = fmt.Sprintf("rules[%d]", i)
		}
		if !validAction(r.Action, false) {
			return nil, fmt.Errorf("policy.rules[%d]: action %q is not Allow, Ask or Deny", i, r.Action)
		}
		if err := checkRuleApproval(r); err != nil {
			return nil, fmt.Errorf("policy.rules[%d].%w", i, err)
		}
		if len(r.Tools) == 0 {
			return nil, fmt.Errorf("policy.rules[%d]: tools must name at least one tool or \"*\"", i)
		}
		for _, t := range r.Tools {
			if t == "*" {
				cr.all = true
			} else if p, ok := strings.CutSuffix(t, "*"); ok {
				cr.prefixes = append(cr.prefixes, p)
			}
			cr.tools[t] = true
		}
		if r.When != "" {
			ast, iss := env.Compile(r.When)
			if iss != nil && iss.Err() != nil {
				return nil, fmt.Errorf("policy.rules[%d].when: %w", i, iss.Err())
			}
			if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
				return nil, fmt.Errorf("policy.rules[%d].when: must be a bool expression, not %s", i, t)
			}
			prg, err := env.Program(ast, cel.CostLimit(celCostLimit))
			if err != nil {
				return nil, fmt.Errorf("policy.rules[%d].when: %w", i, err)
			}
			cr.prg = prg
		}
		out.rules = append(out.rules, cr)
	}
	return out, nil
}

// checkRuleApproval checks what a rule says about its approvals: onExpire
// and quorum (only for action Ask; positive, bounded counts; each group
// once). The error starts with the field, for the caller's rules[i] prefix.
func checkRuleApproval(r exagentv1.PolicyRule) error {
	if r.OnExpire != "" && r.OnExpire != exagentv1.OnExpireStop && r.OnExpire != exagentv1.OnExpireContinue {
		return fmt.Errorf("onExpire: %q is not Stop or Continue", r.OnExpire)
	}
	q := r.Quorum
	if q == nil {
		return nil
	}
	if r.Action != exagentv1.PolicyAsk {
		return fmt.Errorf("quorum: only a rule with action Ask asks for votes (this one is %s)", r.Action)
	}
	if q.Approvals < 0 || q.Approvals > maxQuorum {
		return fmt.Errorf("quorum.approvals: %d is not between 1 and %d", q.Approvals, maxQuorum)
	}
	if q.Approvals == 0 && len(q.Groups) == 0 {
		return fmt.Errorf("quorum: set approvals or groups")
	}
	if len(q.Groups) > maxQuorumGroups {
		return fmt.Errorf("quorum.groups: %d groups, at most %d", len(q.Groups), maxQuorumGroups)
	}
	seen := map[string]bool{}
	for j, g := range q.Groups {
		switch {
		case g.Group == "":
			return fmt.Errorf("quorum.groups[%d].group: must name a group", j)
		case seen[g.Group]:
			return fmt.Errorf("quorum.groups[%d].group: %q is listed twice", j, g.Group)
		case g.Count < 1 || g.Count > maxQuorum:
			return fmt.Errorf("quorum.groups[%d].count: %d is not between 1 and %d", j, g.Count, maxQuorum)
		}
		seen[g.Group] = true
	}
	if q.Needed() > maxQuorum {
		return fmt.Errorf("quorum: needs %d votes, at most %d (an approval keeps %d votes)", q.Needed(), maxQuorum, maxQuorum)
	}
	return nil
}

// rule returns the compiled rule named name (as a call's or approval's
// rule records it), nil for the default ("") or a name the policy no
// longer has.
func (p *Policy) rule(name string) *compiledRule {
	if name == "" {
		return nil
	}
	for i := range p.rules {
		if truncateUTF8(p.rules[i].name, maxRule) == name {
			return &p.rules[i]
		}
	}
	return nil
}

func validAction(a exagentv1.PolicyAction, emptyOK bool) bool {
	switch a {
	case exagentv1.PolicyAllow, exagentv1.PolicyAsk, exagentv1.PolicyDeny:
		return true
	case "":
		return emptyOK
	}
	return false
}

// Spec returns the policy as written.
func (p *Policy) Spec() exagentv1.PolicySpec { return *p.spec.DeepCopy() }

// Evaluate returns what the policy says about one call and the rule that
// decided ("" for the default). Rules are tried in order; the first whose
// tools match and whose `when` is true decides. A `when` that cannot be
// evaluated (arguments that are not an object, a missing key, a non-bool
// result, the cost limit) decides Ask: failing closed never allows.
func (p *Policy) Evaluate(tool string, args json.RawMessage) (exagentv1.PolicyAction, string) {
	return p.EvaluateTool(tool, nil, args)
}

// EvaluateTool is Evaluate with the tool's annotations for `when`.
func (p *Policy) EvaluateTool(tool string, annotations map[string]any, args json.RawMessage) (exagentv1.PolicyAction, string) {
	var argv map[string]any
	argsOK := decodeArgs(args, &argv)
	if annotations == nil {
		annotations = map[string]any{}
	}
	toolv := map[string]any{"name": tool, "annotations": annotations}
	for _, r := range p.rules {
		if !r.matches(tool) {
			continue
		}
		if r.prg == nil {
			return r.action, r.name
		}
		if !argsOK {
			return exagentv1.PolicyAsk, r.name
		}
		val, _, err := r.prg.Eval(map[string]any{"args": argv, "tool": toolv})
		if err != nil {
			return exagentv1.PolicyAsk, r.name
		}
		b, ok := val.Value().(bool)
		if !ok {
			return exagentv1.PolicyAsk, r.name
		}
		if b {
			return r.action, r.name
		}
	}
	return p.spec.DefaultAction(), ""
}

func (r *compiledRule) matches(tool string) bool {
	if r.all || r.tools[tool] {
		return true
	}
	for _, p := range r.prefixes {
		if strings.HasPrefix(tool, p) {
			return true
		}
	}
	return false
}

// decodeArgs reads a JSON object; empty args are the empty object.
func decodeArgs(args json.RawMessage, into *map[string]any) bool {
	if len(bytes.TrimSpace(args)) == 0 {
		*into = map[string]any{}
		return true
	}
	if err := json.Unmarshal(args, into); err != nil || *into == nil {
		return false
	}
	return true
}
