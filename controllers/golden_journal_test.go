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
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// journal is what a golden test compares: the runs of one scenario (their
// spec and status, the status being the durable journal), the decisions
// made about them and the segments their transcripts were sealed into.
type journal struct {
	runs      []exagentv1.AgentRun
	decisions []exagentv1.ApprovalDecision
	segments  []exagentv1.AgentRunSegment
	// aliases replace, in every string, what differs from one run of the
	// test to the next and is no fact of the journal: a generated name,
	// a server's loopback address. UIDs are aliased by render.
	aliases map[string]string
}

// journalOf reads the runs names (in that order) and every decision of
// the namespace.
func (h *harness) journalOf(names ...string) *journal {
	h.t.Helper()
	j := &journal{aliases: map[string]string{}}
	for _, n := range names {
		j.runs = append(j.runs, *h.get(n))
	}
	var list exagentv1.ApprovalDecisionList
	if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	j.decisions = list.Items
	return j
}

// alias makes render write alias wherever s appears.
func (j *journal) alias(s, alias string) { j.aliases[s] = alias }

// entry is one object of a journal as the golden file shows it: what
// identifies it, what it was asked (spec) and what was written (status).
type entry struct {
	Kind   string            `json:"kind"`
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Owners []string          `json:"owners,omitempty"`
	Spec   any               `json:"spec"`
	Status any               `json:"status,omitempty"`
}

// render is the journal as YAML with what is not deterministic
// normalised: the aliases; UIDs (as "<uid of NAME>"); times ("<time>");
// hashes, numbered by first appearance so that equal hashes stay equal
// ("<sha256 #1>"); the active time measured by the clock; strings past a
// few hundred bytes (their length and start).
func (j *journal) render(t *testing.T) []byte {
	t.Helper()
	var entries []entry
	add := func(kind string, obj client.Object, spec, status any) {
		e := entry{Kind: kind, Name: obj.GetName(), Labels: obj.GetLabels(), Spec: spec, Status: status}
		for _, o := range obj.GetOwnerReferences() {
			e.Owners = append(e.Owners, o.Kind+"/"+o.Name)
		}
		entries = append(entries, e)
	}
	n := newNormaliser(j.aliases)
	for _, r := range j.runs {
		n.replace[string(r.UID)] = "<uid of " + n.aliased(r.Name) + ">"
	}
	for _, d := range j.decisions {
		n.replace[string(d.UID)] = "<uid of " + n.aliased(d.Name) + ">"
	}
	n.order()
	for i := range j.runs {
		add("AgentRun", &j.runs[i], j.runs[i].Spec, j.runs[i].Status)
	}
	// Decisions by name once normalised (the apiserver lists them by
	// their generated names), segments in their chain's order.
	decisions := append([]exagentv1.ApprovalDecision(nil), j.decisions...)
	sort.Slice(decisions, func(a, b int) bool { return n.aliased(decisions[a].Name) < n.aliased(decisions[b].Name) })
	for i := range decisions {
		add("ApprovalDecision", &decisions[i], decisions[i].Spec, decisions[i].Status)
	}
	segs := append([]exagentv1.AgentRunSegment(nil), j.segments...)
	sort.Slice(segs, func(a, b int) bool { return segs[a].Spec.Index < segs[b].Spec.Index })
	for i := range segs {
		add("AgentRunSegment", &segs[i], segs[i].Spec, nil)
	}

	b, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc = n.value("", doc)
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	timePattern = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	hashPattern = regexp.MustCompile(`sha256:[0-9a-f]{8,}|\b[0-9a-f]{40,64}\b`)
)

// measured are the keys whose values the clock decides.
var measured = map[string]bool{"activeTimeUsed": true, "activeTimeReserved": true}

// longString is the length past which a string is shown by its size and start.
const longString = 300

type normaliser struct {
	replace map[string]string
	keys    []string // of replace, longest first
	hashes  map[string]int
}

func newNormaliser(aliases map[string]string) *normaliser {
	n := &normaliser{replace: map[string]string{}, hashes: map[string]int{}}
	for k, v := range aliases {
		n.replace[k] = v
	}
	n.order()
	return n
}

// order sorts the replacements longest first, so that a name is replaced
// before any name it begins with.
func (n *normaliser) order() {
	n.keys = n.keys[:0]
	for k := range n.replace {
		n.keys = append(n.keys, k)
	}
	sort.Slice(n.keys, func(a, b int) bool {
		if len(n.keys[a]) != len(n.keys[b]) {
			return len(n.keys[a]) > len(n.keys[b])
		}
		return n.keys[a] < n.keys[b]
	})
}

func (n *normaliser) aliased(s string) string {
	for _, k := range n.keys {
		s = strings.ReplaceAll(s, k, n.replace[k])
	}
	return s
}

// value normalises v, walking maps in key order: the numbering of hashes
// is then the same at every run.
func (n *normaliser) value(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(x))
		for _, k := range keys {
			out[n.aliased(k)] = n.value(k, x[k])
		}
		return out
	case []any:
		for i := range x {
			x[i] = n.value(key, x[i])
		}
		return x
	case string:
		if measured[key] {
			return "<measured>"
		}
		s := n.aliased(x)
		s = timePattern.ReplaceAllString(s, "<time>")
		s = hashPattern.ReplaceAllStringFunc(s, func(h string) string {
			if _, ok := n.hashes[h]; !ok {
				n.hashes[h] = len(n.hashes) + 1
			}
			return fmt.Sprintf("<hash #%d>", n.hashes[h])
		})
		if len(s) > longString {
			s = fmt.Sprintf("<%d bytes: %.40s…>", len(s), s)
		}
		return s
	default:
		return v
	}
}
