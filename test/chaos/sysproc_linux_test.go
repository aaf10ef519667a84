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

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// dieWithParent makes the child receive SIGTERM when the test binary dies
// (a -timeout panic skips TestMain's teardown), so no control plane or
// manager outlives the suite.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// memoryOf reads a process's resident set now (VmRSS) and its peak over
// its life so far (VmHWM, the kernel's high-water mark: no sample can
// miss a spike), from /proc/PID/status.
func memoryOf(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		for field, into := range map[string]*int64{"VmRSS:": &rss, "VmHWM:": &peak} {
			if v, ok := strings.CutPrefix(line, field); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err != nil {
					return 0, 0, fmt.Errorf("/proc/%d/status: %s %w", pid, field, err)
				}
				*into = kb << 10
			}
		}
	}
	if rss == 0 || peak == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no VmRSS or VmHWM", pid)
	}
	return rss, peak, nil
}
