package chaos

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the child receive SIGTERM when the test binary dies
// (a -timeout panic skips TestMain's teardown), so no control plane or
// manager outlives the suite.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
