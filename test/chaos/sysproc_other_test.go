//go:build !linux

package chaos

import (
	"errors"
	"os/exec"
)

// dieWithParent has no portable equivalent outside Linux.
func dieWithParent(*exec.Cmd) {}

// memoryOf: /proc is Linux's; elsewhere the manager's memory is not read.
func memoryOf(int) (rss, peak int64, err error) {
	return 0, 0, errors.New("reading a process's memory needs /proc (Linux)")
}
