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
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// ShardedKinds are the kinds a manager caches only its shard of: the runs
// (the bulk of the cache and of the work), their decisions and their
// segments. Every other kind — Agents, budgets, schedules, triggers,
// conversations — is small, read by every shard (a run reads its Agent;
// the trigger listener on every replica looks triggers up), and written
// by the one shard that owns it (Serving.Owns).
func ShardedKinds() []client.Object {
	return []client.Object{&exagentv1.AgentRun{}, &exagentv1.ApprovalDecision{}, &exagentv1.AgentRunSegment{}}
}

// Cache confines opts' informers of the sharded kinds to the shard
// served, keeping whatever else their ByObject says (the runs' transform).
// The informers' first list — the manager's start-up sweep — then asks
// the apiserver for this shard's objects only.
func (v Serving) Cache(opts *cache.Options) {
	sel := v.Selector()
	if sel == nil {
		return
	}
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	for _, kind := range ShardedKinds() {
		found := false
		for obj, by := range opts.ByObject {
			if sameKind(obj, kind) {
				by.Label = sel
				opts.ByObject[obj] = by
				found = true
			}
		}
		if !found {
			opts.ByObject[kind] = cache.ByObject{Label: sel}
		}
	}
}

func sameKind(a, b client.Object) bool {
	switch a.(type) {
	case *exagentv1.AgentRun:
		_, ok := b.(*exagentv1.AgentRun)
		return ok
	case *exagentv1.ApprovalDecision:
		_, ok := b.(*exagentv1.ApprovalDecision)
		return ok
	case *exagentv1.AgentRunSegment:
		_, ok := b.(*exagentv1.AgentRunSegment)
		return ok
	}
	return false
}
