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
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// dieWithParent makes the kernel send sig to the child when the test
// binary dies (a -timeout panic skips every cleanup), so that no control
// plane or manager outlives the suite.
func dieWithParent(cmd *exec.Cmd, sig syscall.Signal) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: sig}
}

// Memory reads the process's resident set from /proc/PID/status: now
// (VmRSS, split into anonymous memory — heap, stacks — and file pages —
// the binary's code and data, shared and reclaimable) and its peak over
// its life so far (VmHWM, the kernel's high-water mark: no sample can miss
// a spike).
func (p *Process) Memory() (Memory, error) {
	pid := p.Pid()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	fields := map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.Peak, "RssAnon": &m.Anon, "RssFile": &m.File}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		into := fields[k]
		if !ok || into == nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, k, err)
		}
		*into = kb << 10
	}
	if m.RSS == 0 || m.Peak == 0 {
		return Memory{}, fmt.Errorf("/proc/%d/status has no VmRSS or VmHWM", pid)
	}
	return m, nil
}
