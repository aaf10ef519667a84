package chaos

import "testing"

// TestChaos runs the fault scenarios: R5 on a control plane of its own,
// beside R1, R2 and R3, which take turns on the shared one (their
// managers reconcile every namespace, so they never overlap). The history
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
		t.Run("R3-ApiserverFaults", testApiserverFaults)
	})
}
