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

// Package upgrade owns the upgrade test of the last release (issue 42
// item 4, docs/architecture.md §21): `make test-upgrade` (build tag
// upgrade; `make chaos` runs it too).
//
// It builds the last release's manager and devcluster from this
// repository's history (git worktree add --detach at the release's commit,
// cached by commit under ${EXAGENT_CACHE:-${XDG_CACHE_HOME:-~/.cache}/exagent}/upgrade/),
// starts that release's local control plane on an etcd data directory and
// its manager as its own identity, and leaves runs in every state a user
// can leave them in that the release supports: waiting for approval, one
// decision already applied and a second call waiting, a tool call in flight
// when the manager stops, an Uncertain call, a delegation tree with a paused
// child, an ended run whose TTL is not reached, and a signed notification
// whose sink is down. Then it upgrades as `helm upgrade` would — the old
// manager stops, the control plane restarts on the same data directory
// with this tree's CRDs, webhooks and RBAC, this tree's manager starts —
// decides and resolves everything as a person would (the kubectl approve
// plugin of this tree), and checks that every run ends as it would have
// without the upgrade, each tool effect exactly once (the test/chaos tool
// servers are the oracle), every decision the release signed still
// verifies, the pending notification is delivered signed, every run this
// tree wrote carries status.formatVersion 2 (v0.3.0's carried none), and
// the storage migration (a StorageVersionMigration per CRD, carried out by
// the local kube-controller-manager) leaves every CRD's
// status.storedVersions [v1beta1]. The test speaks v1alpha1 to v0.3.0's
// control plane and v1beta1 to this tree's (apiversion_test.go). Last it
// starts the release's manager again on the upgraded store (a downgrade)
// and checks that what happens is loud, never a silent change of a run.
//
// The servers, the oracles and the process harness are the ones test/chaos
// and test/e2e use (test/chaos, internal/testing/procs); this package adds
// only the release build and the scenario.
package upgrade
