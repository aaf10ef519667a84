//go:build !linux

package e2e

import "os/exec"

// dieWithParent has no portable equivalent outside Linux.
func dieWithParent(*exec.Cmd) {}
