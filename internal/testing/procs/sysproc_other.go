//go:build !linux

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
