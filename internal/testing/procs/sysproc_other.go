//go:build !linux

package procs

import (
	"errors"
	"os/exec"
	"syscall"
)

// dieWithParent has no portable equivalent outside Linux.
func dieWithParent(*exec.Cmd, syscall.Signal) {}

// Memory needs /proc (Linux); elsewhere a child's memory is not read.
func (p *Process) Memory() (Memory, error) {
	return Memory{}, errors.New("reading a process's memory needs /proc (Linux)")
}
