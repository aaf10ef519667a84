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

package shard

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: " ", want: ""},
		{in: "c,a,b", want: "a,b,c"},
		{in: " a , b ", want: "a,b"},
		{in: "a,,b", err: "an empty shard name"},
		{in: "a,a", err: `shard "a" is listed twice`},
		{in: "a,Bad Name", err: `shard "Bad Name" is not a label value`},
		{in: strings.Repeat("x", 64), err: "is not a label value"},
	} {
		s, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) = %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || s.String() != tc.want {
			t.Errorf("Parse(%q) = %q, %v; want %q", tc.in, s.String(), err, tc.want)
		}
	}
	many := make([]string, MaxShards+1)
	for i := range many {
		many[i] = fmt.Sprintf("s%d", i)
	}
	if _, err := Parse(strings.Join(many, ",")); err == nil {
		t.Errorf("Parse of %d shards succeeded", len(many))
	}
}

// TestAssignIsStable pins the hash: a changed function would move every
// run of every cluster at the next upgrade, so these values must never
// change.
func TestAssignIsStable(t *testing.T) {
	s, _ := Parse("a,b,c")
	reversed, _ := Parse("c,b,a")
	got := map[string]string{}
	for _, key := range []string{"AgentRun/r1", "AgentRun/r2", "AgentRun/r3", "Conversation/chat", "AgentSchedule/nightly", ""} {
		got[key] = s.Assign("team-a", key)
		if r := reversed.Assign("team-a", key); r != got[key] {
			t.Errorf("Assign(%q) depends on the list's order: %q and %q", key, got[key], r)
		}
	}
	// Recorded once; see the comment above.
	for k, v := range map[string]string{
		"AgentRun/r1": "c", "AgentRun/r2": "a", "AgentRun/r3": "b",
		"Conversation/chat": "b", "AgentSchedule/nightly": "b", "": "c",
	} {
		if got[k] != v {
			t.Errorf("Assign(team-a, %q) = %q, want %q (the hash changed: every placed run would move)", k, got[k], v)
		}
	}
	if (Set{}).Assign("ns", "k") != "" {
		t.Error("an empty Set assigned a shard")
	}
}

// TestAssignMovesOnlyWhatItMust: adding a shard moves about 1/N of the
// runs, all of them to the new shard; the shares stay even.
func TestAssignMovesOnlyWhatItMust(t *testing.T) {
	three, _ := Parse("a,b,c")
	four, _ := Parse("a,b,c,d")
	const n = 30000
	count := map[string]int{}
	moved := 0
	for i := range n {
		key := fmt.Sprintf("AgentRun/run-%d", i)
		before, after := three.Assign("ns", key), four.Assign("ns", key)
		count[before]++
		if before != after {
			moved++
			if after != "d" {
				t.Fatalf("%s moved from %s to %s, not to the new shard", key, before, after)
			}
		}
	}
	for _, name := range three.Names() {
		if share := float64(count[name]) / n; share < 0.30 || share > 0.37 {
			t.Errorf("shard %s got %.3f of the runs, want about 1/3", name, share)
		}
	}
	if share := float64(moved) / n; share < 0.22 || share > 0.28 {
		t.Errorf("adding a fourth shard moved %.3f of the runs, want about 1/4", share)
	}
}

func TestServing(t *testing.T) {
	a, err := Only("a")
	if err != nil {
		t.Fatal(err)
	}
	unlabelled, _ := Only("")
	for _, tc := range []struct {
		v      Serving
		labels map[string]string
		want   bool
		sel    string
	}{
		{v: All(), labels: nil, want: true, sel: "<nil>"},
		{v: All(), labels: map[string]string{exagentv1.LabelShard: "b"}, want: true, sel: "<nil>"},
		{v: a, labels: map[string]string{exagentv1.LabelShard: "a"}, want: true, sel: "exagent.io/shard=a"},
		{v: a, labels: map[string]string{exagentv1.LabelShard: "b"}, want: false, sel: "exagent.io/shard=a"},
		{v: a, labels: nil, want: false, sel: "exagent.io/shard=a"},
		{v: unlabelled, labels: nil, want: true, sel: "!exagent.io/shard"},
		{v: unlabelled, labels: map[string]string{exagentv1.LabelShard: "a"}, want: false, sel: "!exagent.io/shard"},
	} {
		if got := tc.v.Serves(tc.labels); got != tc.want {
			t.Errorf("%s serves %v = %v, want %v", tc.v, tc.labels, got, tc.want)
		}
		sel := "<nil>"
		if s := tc.v.Selector(); s != nil {
			sel = s.String()
			if s.Matches(labelSet(tc.labels)) != tc.want {
				t.Errorf("%s: selector %s and Serves disagree on %v", tc.v, sel, tc.labels)
			}
		}
		if sel != tc.sel {
			t.Errorf("%s: selector %s, want %s", tc.v, sel, tc.sel)
		}
	}
	if _, err := Only("Not A Label"); err == nil {
		t.Error("Only accepted a name that is no label value")
	}
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool   { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) {
	v, ok := l[k]
	return v, ok
}

func TestRootKey(t *testing.T) {
	run := func(mut func(*exagentv1.AgentRun)) *exagentv1.AgentRun {
		r := &exagentv1.AgentRun{}
		r.Name = "r"
		mut(r)
		return r
	}
	for _, tc := range []struct {
		run  *exagentv1.AgentRun
		want string
	}{
		{run(func(*exagentv1.AgentRun) {}), "AgentRun/r"},
		{run(func(r *exagentv1.AgentRun) {
			r.Spec.ConversationRef = &exagentv1.ConversationRef{Name: "chat"}
		}), "Conversation/chat"},
		{run(func(r *exagentv1.AgentRun) {
			r.OwnerReferences = append(r.OwnerReferences, ownerRef("AgentSchedule", "nightly"))
		}), "AgentSchedule/nightly"},
		{run(func(r *exagentv1.AgentRun) {
			r.OwnerReferences = append(r.OwnerReferences, ownerRef("AgentTrigger", "alerts"))
		}), "AgentTrigger/alerts"},
	} {
		if got := RootKey(tc.run); got != tc.want {
			t.Errorf("RootKey = %q, want %q", got, tc.want)
		}
	}
}

func ownerRef(kind, name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: exagentv1.GroupVersion.String(), Kind: kind, Name: name, UID: "u"}
}
