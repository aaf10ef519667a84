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

package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// suiteShards are the suite webhook's --shards.
var suiteShards = func() shard.Set {
	s, err := shard.Parse("a,b,c")
	if err != nil {
		panic(err)
	}
	return s
}()

// TestShardStamp: admission places every new run — by the stable hash of
// its root over --shards (whatever label its author wrote), with its
// conversation, its tree (the label the manager copied to a child), on a
// Namespace's pinned shard, on one shard for a whole namespace with an
// AgentBudget — and labels each decision with its run's shard.
func TestShardStamp(t *testing.T) {
	s := newScenario(t)
	dave := as(t, "dave")
	shardOf := func(name string) string {
		t.Helper()
		r := &exagentv1.AgentRun{}
		if err := admin.Get(t.Context(), types.NamespacedName{Namespace: s.ns, Name: name}, r); err != nil {
			t.Fatal(err)
		}
		return r.Labels[exagentv1.LabelShard]
	}
	create := func(name string, mut func(*exagentv1.AgentRun)) string {
		t.Helper()
		r := fixture.MakeRun(name, s.ns).Agent("payments").Input("x").Obj()
		if mut != nil {
			mut(r)
		}
		if err := dave.Create(t.Context(), r); err != nil {
			t.Fatalf("creating run %s: %v", name, err)
		}
		return r.Labels[exagentv1.LabelShard]
	}

	t.Run("hash of the run, whatever its author wrote", func(t *testing.T) {
		seen := map[string]int{}
		for i := range 24 {
			name := fmt.Sprintf("hashed-%d", i)
			got := create(name, func(r *exagentv1.AgentRun) { r.Labels = map[string]string{exagentv1.LabelShard: "mine"} })
			if want := suiteShards.Assign(s.ns, "AgentRun/"+name); got != want || shardOf(name) != want {
				t.Errorf("run %s placed on %q (stored %q), want %q", name, got, shardOf(name), want)
			}
			seen[got]++
		}
		if len(seen) != 3 {
			t.Errorf("24 runs landed on %d shards, want all 3: %v", len(seen), seen)
		}
		if got := shardOf(runPayments); got != suiteShards.Assign(s.ns, "AgentRun/"+runPayments) {
			t.Errorf("the scenario's run is on %q", got)
		}
	})

	t.Run("a decision carries its run's shard", func(t *testing.T) {
		d := approve(s.ns, "stamped", runPayments)
		d.Labels = map[string]string{exagentv1.LabelShard: "elsewhere"}
		if err := as(t, "alice").Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		if got, want := d.Labels[exagentv1.LabelShard], shardOf(runPayments); got != want {
			t.Errorf("decision on shard %q, want its run's %q", got, want)
		}
	})

	t.Run("a conversation's turns share its shard", func(t *testing.T) {
		c := &exagentv1.Conversation{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: s.ns},
			Spec: exagentv1.ConversationSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}}}
		if err := admin.Create(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		got := create("chat-t1", func(r *exagentv1.AgentRun) {
			r.Spec.ConversationRef = &exagentv1.ConversationRef{Name: "chat"}
		})
		if want := suiteShards.Assign(s.ns, shard.ConversationKey("chat")); got != want {
			t.Errorf("turn placed on %q, want its conversation's %q", got, want)
		}
	})

	t.Run("a child keeps the shard the manager copied from its parent", func(t *testing.T) {
		root := &exagentv1.AgentRun{}
		if err := admin.Get(t.Context(), types.NamespacedName{Namespace: s.ns, Name: runPayments}, root); err != nil {
			t.Fatal(err)
		}
		parentShard := root.Labels[exagentv1.LabelShard]
		child := fixture.MakeRun("payments-child", s.ns).Agent("payments").Input("x").Obj()
		child.Labels = map[string]string{exagentv1.LabelParentRun: root.Name, exagentv1.LabelRootRun: root.Name, exagentv1.LabelShard: parentShard}
		child.Spec.RequestedBy = root.Spec.RequestedBy.DeepCopy()
		child.Spec.Delegation = &exagentv1.Delegation{
			Parent: exagentv1.RunReference{Name: root.Name, UID: string(root.UID)},
			Root:   exagentv1.RunReference{Name: root.Name, UID: string(root.UID)},
			CallID: "c1", Ancestry: []string{string(root.UID) + "/c1"},
		}
		if err := admin.Create(t.Context(), child); err != nil { // the suite's manager identity is the admin
			t.Fatal(err)
		}
		if got := child.Labels[exagentv1.LabelShard]; got != parentShard {
			t.Errorf("child on %q, want its parent's %q", got, parentShard)
		}
	})

	t.Run("a namespace's pin", func(t *testing.T) {
		for _, pin := range []string{"b", "dedicated"} {
			setNamespaceLabel(t, s.ns, pin)
			i := 0
			waitFor(t, "runs placed on the pinned shard "+pin, func() bool {
				i++
				return create(fmt.Sprintf("pinned-%s-%d", pin, i), nil) == pin
			})
		}
		setNamespaceLabel(t, s.ns, "")
	})

	t.Run("a pin outside --shards is warned of", func(t *testing.T) {
		setNamespaceLabel(t, s.ns, "dedicated")
		defer setNamespaceLabel(t, s.ns, "")
		var warned []string
		cfg := rest.CopyConfig(userConfigs["dave"])
		cfg.WarningHandler = warningsTo(&warned)
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		waitFor(t, "a warning that shard dedicated is not listed", func() bool {
			i++
			warned = nil
			r := fixture.MakeRun(fmt.Sprintf("warned-%d", i), s.ns).Agent("payments").Input("x").Obj()
			if err := c.Create(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			return len(warned) == 1 && strings.Contains(warned[0], `pins its runs to shard "dedicated", which is not one of --shards (a,b,c)`)
		})
	})

	t.Run("a namespace with an AgentBudget is held whole", func(t *testing.T) {
		b := &exagentv1.AgentBudget{ObjectMeta: metav1.ObjectMeta{Name: "cap", Namespace: s.ns},
			Spec: exagentv1.AgentBudgetSpec{RunsPerHour: ptrTo(int32(1000))}}
		if err := admin.Create(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		whole := suiteShards.Assign(s.ns, "")
		i := 0
		waitFor(t, "runs placed on the namespace's shard "+whole, func() bool {
			i++
			return create(fmt.Sprintf("budgeted-%d", i), nil) == whole
		})
		for j := range 12 {
			if got := create(fmt.Sprintf("budgeted-more-%d", j), nil); got != whole {
				t.Errorf("run budgeted-more-%d on %q, want the namespace's %q", j, got, whole)
			}
		}
	})
}

// setNamespaceLabel sets (or, with "", removes) ns's exagent.io/shard label.
func setNamespaceLabel(t *testing.T, ns, value string) {
	t.Helper()
	obj := &corev1.Namespace{}
	if err := admin.Get(t.Context(), types.NamespacedName{Name: ns}, obj); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(obj.DeepCopy())
	if value == "" {
		delete(obj.Labels, exagentv1.LabelShard)
	} else {
		if obj.Labels == nil {
			obj.Labels = map[string]string{}
		}
		obj.Labels[exagentv1.LabelShard] = value
	}
	if err := admin.Patch(t.Context(), obj, patch); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond (the webhook's cache learns of a label a moment
// after it is written) until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// warningsTo collects the apiserver's warnings into out.
func warningsTo(out *[]string) rest.WarningHandler { return collectWarnings{out} }

type collectWarnings struct{ out *[]string }

func (w collectWarnings) HandleWarningHeader(_ int, _ string, text string) {
	*w.out = append(*w.out, text)
}
