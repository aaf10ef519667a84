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
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Spec is how to start one child process.
type Spec struct {
	// Name names the process in errors ("manager r1-first").
	Name string
	// Bin and Args are the command.
	Bin  string
	Args []string
	// Env is the child's whole environment (nil: none at all, as
	// exec.Cmd.Env has it: pass os.Environ() to inherit).
	Env []string
	// Log is the file the child's stdout and stderr go to (created).
	Log string
	// ParentDeath is the signal the child gets when the test binary dies
	// first, on Linux (0: SIGTERM, a clean stop; a benchmark that must
	// leave no drain's writes behind asks for SIGKILL).
	ParentDeath syscall.Signal
}

// Process is a child process whose output goes to a log file and whose
// exit one goroutine observes, so that stopping it can wait with a
// deadline and a readiness wait can notice that it died.
type Process struct {
	Name string
	// Log is the path of the captured stdout and stderr.
	Log string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // valid once done is closed
}

// Start starts the child; it runs until it exits, Stop or Kill.
func Start(s Spec) (*Process, error) {
	logf, err := os.Create(s.Log)
	if err != nil {
		return nil, fmt.Errorf("the log of %s: %w", s.Name, err)
	}
	cmd := exec.Command(s.Bin, s.Args...)
	cmd.Env = s.Env
	cmd.Stdout, cmd.Stderr = logf, logf
	sig := s.ParentDeath
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	dieWithParent(cmd, sig)
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("starting %s: %w", s.Name, err)
	}
	p := &Process{Name: s.Name, Log: s.Log, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the exit error of a process that ended (nil for exit status 0,
// and while it runs).
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Alive is nil while the process runs, and otherwise an error with its
// exit and the tail of its log.
func (p *Process) Alive() error {
	if !p.Exited() {
		return nil
	}
	return fmt.Errorf("%s exited: %v\n%s", p.Name, p.err, p.Tail())
}

// Stop sends sig (SIGTERM: a graceful stop) and waits up to timeout, then
// kills. It returns the exit error of a process that ended within the
// timeout.
func (p *Process) Stop(sig syscall.Signal, timeout time.Duration) error {
	if p.Exited() {
		return p.err
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %s after %s; killed", p.Name, timeout, sig)
	}
}

// Kill is SIGKILL: the process gets no chance to clean up, like a crashed
// pod. It returns once the process is gone.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Tail is the end of the log (its last 4000 bytes), for error messages.
func (p *Process) Tail() string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	const most = 4000
	if len(b) > most {
		b = b[len(b)-most:]
	}
	return string(b)
}

// LogContains reports whether one line of the log has every one of parts.
func (p *Process) LogContains(parts ...string) bool {
	b, err := os.ReadFile(p.Log)
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

// IsSignalExit reports whether err is the exit of a process a signal ended
// (what Stop returns for a child that does not trap the signal).
func IsSignalExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && !ee.Exited()
}
