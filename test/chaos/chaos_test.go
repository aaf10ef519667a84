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

package chaos

import "testing"

// TestChaos runs the fault scenarios: R5 on a control plane of its own,
// beside R1, R2, R3, R7 (conversations) and R8 (schedules and triggers),
// which take turns on the
// shared one (their managers reconcile every namespace, so they never
// overlap). The history
// check itself (R4) is unit-tested in history_test.go and judges every
// scenario. Replay one with -run, e.g. -run 'TestChaos/Shared/R2' -chaos.seed=N.
func TestChaos(t *testing.T) {
	t.Run("R5-RestartFromBytes", func(t *testing.T) {
		t.Parallel()
		testRestartFromBytes(t)
	})
	t.Run("Shared", func(t *testing.T) {
		t.Parallel()
		t.Run("R1-KillMatrix", testKillMatrix)
		t.Run("R2-ThreeManagers", testThreeManagersKilledAtRandom)
		t.Run("R2-ShardedManagers", testShardedManagersKilledAtRandom)
		t.Run("R3-ApiserverFaults", testApiserverFaults)
		t.Run("R7-Conversations", testConversations)
		t.Run("R8-SchedulesTriggers", testSchedulesAndTriggers)
	})
}

// TestTenants runs R6 on the shared control plane. It is a test of its
// own, not a subtest of TestChaos, so that -run 'R6|Tenant' selects it;
// top-level tests run one after another, so its manager, which reconciles
// every namespace, never overlaps R1–R3's.
func TestTenants(t *testing.T) {
	t.Run("R6-HostileNeighbour", testTenants)
}
