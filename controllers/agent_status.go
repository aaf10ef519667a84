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

package controllers

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// An Agent's status is a view computed at every check from what the
// checks found (agentFindings), never memory between checks: the pure
// functions below turn findings into the status, say whether it differs
// from the stored one (a write only then: the apiserver is shared) and
// when to look again.

// agentProblem is one failing check: where (what the Agent names: "model",
// `tool "pay"`, `notify sink "ops"`), why (a PascalCase reason) and what
// to do (the message).
type agentProblem struct {
	where, reason, message string
}

// agentFindings is what one check of an Agent found.
type agentFindings struct {
	generation int64
	// problems fail the Agent, in check order: its configuration, the
	// model, each tool in spec order, the notification sinks.
	problems []agentProblem
	// tools is each tool's result, in spec order.
	tools []exagentv1.AgentToolStatus
	// checking names what is still under way (an MCP server's first
	// tools/list): Ready is Unknown while nothing failed.
	checking []string
}

// agentRetryBase is the first wait of an Agent that is not Ready before
// it is checked again (a Secret created, a server back): the wait then
// grows with the time it has been not Ready, up to the recheck interval.
const agentRetryBase = 5 * time.Second

// agentStatus is the status old becomes with what f found at now. The
// Ready condition (and kstatus' Reconciling and Stalled, which follow it)
// keeps its lastTransitionTime while its status stays the same.
func agentStatus(old exagentv1.AgentStatus, f agentFindings, now time.Time) exagentv1.AgentStatus {
	out := *old.DeepCopy()
	out.ObservedGeneration = f.generation
	out.Tools = append([]exagentv1.AgentToolStatus(nil), f.tools...)
	if len(out.Tools) > exagentv1.MaxAgentTools {
		out.Tools = out.Tools[:exagentv1.MaxAgentTools]
	}
	if len(out.Tools) == 0 {
		out.Tools = nil
	}
	for i := range out.Tools {
		out.Tools[i].Message = boundMessage(out.Tools[i].Message)
	}
	ready := metav1.Condition{Type: exagentv1.ConditionReady, ObservedGeneration: f.generation, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case len(f.problems) > 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, f.problems[0].reason
		ready.Message = problemsMessage(f.problems)
	case len(f.checking) > 0:
		ready.Status, ready.Reason = metav1.ConditionUnknown, exagentv1.ReasonChecking
		ready.Message = boundMessage("checking " + strings.Join(f.checking, "; "))
	default:
		ready.Status, ready.Reason = metav1.ConditionTrue, exagentv1.ReasonAgentReady
		ready.Message = fmt.Sprintf("every check passed (%s)", countTools(len(f.tools)))
	}
	for _, c := range AgentConditions(ready) {
		meta.SetStatusCondition(&out.Conditions, c)
	}
	return out
}

// AgentConditions are the conditions an Agent's Ready condition implies:
// Ready itself and the kstatus abnormal-true conditions, which take its
// reason (and, while True, its message) — Reconciling True while Ready is
// Unknown (a check under way: kstatus InProgress), Stalled True while it
// is False (kstatus Failed). test/health evaluates GitOps health on
// exactly these.
func AgentConditions(ready metav1.Condition) []metav1.Condition {
	follow := func(typ string, on bool) metav1.Condition {
		c := ready
		c.Type, c.Status = typ, boolCondition(on)
		if !on {
			c.Message = "" // the message is Ready's: once in the status is enough
		}
		return c
	}
	return []metav1.Condition{ready,
		follow(exagentv1.ConditionReconciling, ready.Status == metav1.ConditionUnknown),
		follow(exagentv1.ConditionStalled, ready.Status == metav1.ConditionFalse)}
}

// agentStatusChanged reports whether next differs from what is stored.
func agentStatusChanged(stored, next exagentv1.AgentStatus) bool {
	return !equality.Semantic.DeepEqual(stored, next)
}

// agentRecheck is how long until the Agent is checked again: the interval
// when Ready, stretched by up to a tenth by spread (the Agent's own: all
// the Agents checked at a manager's start do not come back at one
// instant, period after period); when not Ready, as long as it has been
// not Ready (so the waits double), at least agentRetryBase and at most the
// interval; soonest, when set, is an instant a check waits for (an MCP
// server's backoff ending, a listing that must have come back).
func agentRecheck(st exagentv1.AgentStatus, soonest, interval time.Duration, spread uint32, now time.Time) time.Duration {
	d := interval + time.Duration(uint64(interval/10)*uint64(spread%1024)/1024)
	if c := meta.FindStatusCondition(st.Conditions, exagentv1.ConditionReady); c != nil && c.Status != metav1.ConditionTrue {
		d = min(max(now.Sub(c.LastTransitionTime.Time), min(agentRetryBase, interval)), interval)
	}
	if soonest > 0 && soonest < d {
		d = soonest
	}
	return d
}

// agentSpread is the Agent's share of the recheck's stretch (agentRecheck).
func agentSpread(uid types.UID) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return h.Sum32()
}

// problemsMessage lists the problems, bounded: as many as fit (the first
// one shortened if it alone would not), then how many more there are.
func problemsMessage(ps []agentProblem) string {
	const moreRoom = 24 // "; and 1000 more", with room to spare
	var b strings.Builder
	for i, p := range ps {
		part := p.where + ": " + p.message
		if i > 0 {
			part = "; " + part
		}
		room := exagentv1.MaxAgentStatusMessage - b.Len()
		if i < len(ps)-1 {
			room -= moreRoom
		}
		if len(part) > room {
			if i > 0 {
				fmt.Fprintf(&b, "; and %d more", len(ps)-i)
				break
			}
			part = truncate(part, room)
		}
		b.WriteString(part)
	}
	return boundMessage(b.String())
}

// boundMessage keeps a message within MaxAgentStatusMessage bytes (so
// within as many characters) of valid UTF-8: what an author or a server
// controls never grows the status past its bound.
func boundMessage(s string) string {
	return truncate(strings.ToValidUTF8(s, "\uFFFD"), exagentv1.MaxAgentStatusMessage)
}

func boolCondition(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

func countTools(n int) string {
	if n == 1 {
		return "1 tool"
	}
	return fmt.Sprintf("%d tools", n)
}
