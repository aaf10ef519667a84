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

// A grant (status.grants) is a run-wide approval: an Approve with scope
// Run lets later calls of the same tool in the same run that the same
// rule asks about run without asking, each journaled with the decision
// that allowed it (calls[].grant). It holds while the tool's fingerprint
// (schema and effect configuration) and the policy's fingerprint are the
// ones it was given under; a policy Deny still wins, since only an Ask is
// ever answered by a grant.

// checkSticky refuses scope Run where the rule forbids it or the run
// cannot hold one more grant.
func (e *Env) checkSticky(st *Status, a *exagentv1.Approval, c *exagentv1.ToolCall) error {
	if r := e.policy.rule(a.Rule); r != nil && r.sticky != nil && !*r.sticky {
		return conflictf("rule %s forbids approving tool %s for the rest of the run (sticky: false): every call must be seen; "+
			"approve this call alone (without --for-run)", a.Rule, c.Tool)
	}
	if e.toolHashes[c.Tool] == "" {
		return conflictf("tool %q has no current fingerprint to bind a run-wide approval to "+
			"(for an mcp tool: the manager has no current tools/list of its server); approve this call alone, or try again", c.Tool)
	}
	if findGrant(st, e, c.Tool, a.Rule) < 0 && len(st.Grants) >= maxGrants {
		return conflictf("the run already holds %d run-wide approvals, the most it keeps; approve this call alone", maxGrants)
	}
	return nil
}

// grant records a's run-wide approval of c's tool (replacing an older one
// for the same tool and rule).
func (e *Env) grant(st *Status, a *exagentv1.Approval, c *exagentv1.ToolCall, dec *decision) {
	name := dec.cmd.Name
	if name == "" {
		name = dec.cmd.OperationID
	}
	g := exagentv1.RunGrant{Tool: c.Tool, Rule: a.Rule, ToolFingerprint: e.toolHashes[c.Tool], Policy: e.binding.Policy,
		Decision: name, ApprovalID: a.ID}
	if len(a.Votes) == 0 {
		g.Actors = []exagentv1.Actor{*a.Actor.DeepCopy()}
	}
	for i := range a.Votes {
		g.Actors = append(g.Actors, *a.Votes[i].Actor.DeepCopy())
	}
	for i := range st.Grants {
		if st.Grants[i].Tool == c.Tool && st.Grants[i].Rule == a.Rule {
			st.Grants[i] = g
			return
		}
	}
	st.Grants = append(st.Grants, g)
}

// findGrant returns the index of the grant for tool and rule that is in
// force under the current configuration, or -1.
func findGrant(st *Status, e *Env, tool, rule string) int {
	h := e.toolHashes[tool]
	for i := range st.Grants {
		g := &st.Grants[i]
		if g.Tool == tool && g.Rule == rule && h != "" && g.ToolFingerprint == h && g.Policy == e.binding.Policy {
			return i
		}
	}
	return -1
}

// allowByGrant lets a call the policy asks about run under a grant in
// force, recording which decision allowed it; it reports whether one did.
func allowByGrant(st *Status, e *Env, c *exagentv1.ToolCall, rule string) bool {
	i := findGrant(st, e, c.Tool, truncateUTF8(rule, maxRule))
	if i < 0 {
		c.Grant = ""
		return false
	}
	c.Grant = st.Grants[i].Decision
	return true
}

// GrantNote describes, for the plugin, how a call was let through by a grant.
func GrantNote(g *exagentv1.RunGrant) string {
	return fmt.Sprintf("approved for the run by %s (decision %s, approval %s)", actorsString(g.Actors), g.Decision, g.ApprovalID)
}

func actorsString(as []exagentv1.Actor) string {
	s := ""
	for i := range as {
		if i > 0 {
			s += ", "
		}
		s += actorString(&as[i])
	}
	return s
}
