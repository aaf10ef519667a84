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
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is a child process whose output goes to a log file and whose exit
// is observed by one goroutine, so stopping it can wait with a deadline.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // valid after done is closed
}

func startProcess(name, logPath string, env []string, bin string, args ...string) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig and waits up to timeout, then kills.
func (p *process) stop(sig syscall.Signal, timeout time.Duration) error {
	if p.exited() {
		return p.err
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %s after %s; killed", p.name, timeout, sig)
	}
}

// kill is SIGKILL: no cleanup, like a crashed pod.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// logContains reports whether the process's log has every one of parts on one line.
func (p *process) logContains(parts ...string) bool {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		all := true
		for _, part := range parts {
			if !bytes.Contains(line, []byte(part)) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func (p *process) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
