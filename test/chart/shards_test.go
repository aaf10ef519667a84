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

package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	// shardLabel is what a sharded manager's cache selects on (--shard).
	shardLabel = "exagent.io/shard"
	// longestShard is a shard name of the most characters values.schema.json
	// takes: its Deployment's name must still be a 63-character one.
	longestShard = "z-longest-shard-name-the-chart-takes-40c"
)

// checkShards checks the rendering of values, which set shards, against
// the rendering of the same values without: one Deployment and one
// PodDisruptionBudget per shard in place of exagent-manager's, each the
// same but for its name, the shard label in its selector and the shard
// flags; selectors disjoint; each Service selecting every shard's pods.
func checkShards(t *testing.T, objs map[string]*unstructured.Unstructured, values map[string]any) {
	t.Helper()
	var shards []string
	for _, s := range values["shards"].([]any) {
		shards = append(shards, s.(string))
	}
	unshardedValues := map[string]any{}
	for k, v := range values {
		if k != "shards" {
			unshardedValues[k] = v
		}
	}
	unsharded := byKey(render(t, unshardedValues))
	one := unsharded["Deployment/exagent-system/exagent-manager"]
	onePDB := unsharded["PodDisruptionBudget/exagent-system/exagent-manager"]
	if one == nil || onePDB == nil {
		t.Fatal("without shards, no Deployment or PodDisruptionBudget exagent-manager")
	}
	mustLack(t, objs, "Deployment/exagent-system/exagent-manager", "PodDisruptionBudget/exagent-system/exagent-manager")

	pods := map[string]map[string]string{} // shard: its pods' labels
	for _, shard := range shards {
		name := "exagent-manager-" + shard
		if len(name) > 63 {
			t.Errorf("Deployment %s: a name of %d characters", name, len(name))
		}
		d := objs["Deployment/exagent-system/"+name]
		if d == nil {
			t.Errorf("no Deployment %s", name)
			continue
		}
		pods[shard], _, _ = unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
		sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
		if pods[shard][shardLabel] != shard || sel[shardLabel] != shard || d.GetLabels()[shardLabel] != shard {
			t.Errorf("Deployment %s: pods labelled %v, selecting %v, labelled %v: want %s=%s in each", name, pods[shard], sel, d.GetLabels(), shardLabel, shard)
		}
		if !selects(sel, pods[shard]) {
			t.Errorf("Deployment %s selects %v, not its own pods %v", name, sel, pods[shard])
		}

		args, _, _ := unstructured.NestedStringSlice(deploymentContainer(t, d), "args")
		want := []string{"--leader-elect", "--leader-election-id=exagent-manager-" + shard + ".exagent.io",
			"--shard=" + shard, "--shards=" + strings.Join(shards, ",")}
		for _, w := range want {
			if !slices.Contains(args, w) {
				t.Errorf("Deployment %s: args %q lack %s", name, args, w)
			}
		}
		// But for the shard, it is the one manager's Deployment.
		if diff := cmp.Diff(one.Object, unshard(t, d, shard).Object); diff != "" {
			t.Errorf("Deployment %s, less its shard, differs from exagent-manager without shards (-want +got):\n%s", name, diff)
		}

		pdb := objs["PodDisruptionBudget/exagent-system/"+name]
		if pdb == nil {
			t.Errorf("no PodDisruptionBudget %s", name)
		} else if diff := cmp.Diff(onePDB.Object, unshard(t, pdb, shard).Object); diff != "" {
			t.Errorf("PodDisruptionBudget %s, less its shard, differs from exagent-manager's without shards (-want +got):\n%s", name, diff)
		}
	}

	// A pod belongs to one Deployment and one PodDisruptionBudget.
	for _, shard := range shards {
		for _, kind := range []string{"Deployment", "PodDisruptionBudget"} {
			o := objs[kind+"/exagent-system/exagent-manager-"+shard]
			if o == nil {
				continue
			}
			sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
			for other, labels := range pods {
				if other != shard && selects(sel, labels) {
					t.Errorf("%s selects the pods of shard %s too: %v", key(o), other, sel)
				}
			}
		}
	}

	// One webhook, metrics and trigger Service, in front of every shard.
	mustHave(t, objs, "Service/exagent-system/exagent-webhook-service", "Service/exagent-system/exagent-manager-metrics", "Service/exagent-system/exagent-triggers")
	for _, o := range objs {
		if o.GetKind() != "Service" {
			continue
		}
		sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector")
		for shard, labels := range pods {
			if !selects(sel, labels) {
				t.Errorf("%s (selector %v) does not select the pods of shard %s", key(o), sel, shard)
			}
		}
	}

	// Each shard's Lease is one the manager may write.
	if !grantsLeases(objs["Role/exagent-system/exagent-manager"]) {
		t.Error("Role exagent-manager does not grant every Lease: each shard has its own, exagent-manager-SHARD.exagent.io")
	}
}

// unshard is o as it would be without shards: its shard label, selector
// term and flags removed, named exagent-manager.
func unshard(t *testing.T, o *unstructured.Unstructured, shard string) *unstructured.Unstructured {
	t.Helper()
	u := o.DeepCopy()
	u.SetName("exagent-manager")
	labels := u.GetLabels()
	delete(labels, shardLabel)
	u.SetLabels(labels)
	for _, path := range [][]string{
		{"spec", "selector", "matchLabels"},
		{"spec", "template", "metadata", "labels"},
	} {
		unstructured.RemoveNestedField(u.Object, append(path, shardLabel)...)
	}
	if u.GetKind() != "Deployment" {
		return u
	}
	terms, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
	for _, term := range terms {
		unstructured.RemoveNestedField(term.(map[string]any), "podAffinityTerm", "labelSelector", "matchLabels", shardLabel)
	}
	if err := unstructured.SetNestedSlice(u.Object, terms, "spec", "template", "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution"); err != nil {
		t.Fatal(err)
	}
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	c := cs[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	args = slices.DeleteFunc(args, func(a string) bool {
		return a == "--leader-election-id=exagent-manager-"+shard+".exagent.io" ||
			a == "--shard="+shard || strings.HasPrefix(a, "--shards=")
	})
	c["args"] = toAny(args)
	if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	return u
}

// selects: a matchLabels selector, not empty, selects a pod with labels.
func selects(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// grantsLeases: role lets its subject create and update any Lease.
func grantsLeases(role *unstructured.Unstructured) bool {
	if role == nil {
		return false
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		rule := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
		names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
		if slices.Contains(groups, "coordination.k8s.io") && slices.Contains(resources, "leases") &&
			slices.Contains(verbs, "create") && slices.Contains(verbs, "update") && len(names) == 0 {
			return true
		}
	}
	return false
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
