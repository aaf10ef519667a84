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
	"syscall"
	"time"
)

const sigterm = syscall.SIGTERM

// ManagerSpec is how to start cmd/manager as a child process.
type ManagerSpec struct {
	// Name names the process ("manager r1-first").
	Name string
	// Bin is the built manager (Builder: ManagerRelease, ManagerChaos, …).
	Bin string
	// Kubeconfig is its --kubeconfig (devcluster's DIR/kubeconfig, or one
	// WriteKubeconfig wrote for an envtest).
	Kubeconfig string
	// Args are its other flags.
	Args []string
	// Env and Log are the child's (Spec); ParentDeath too.
	Env         []string
	Log         string
	ParentDeath syscall.Signal
	// Ready is what StartManager waits for (nil: nothing, the caller
	// waits its own way); Timeout bounds the wait (default 5 minutes).
	Ready   Condition
	Timeout time.Duration
}

// StartManager starts the manager and waits until Ready holds. A manager
// that exits first, or is not ready in time, is an error with the tail of
// its log; a manager that is not ready in time is killed.
func StartManager(s ManagerSpec) (*Process, error) {
	name := s.Name
	if name == "" {
		name = "manager"
	}
	p, err := Start(Spec{Name: name, Bin: s.Bin, Args: append([]string{"--kubeconfig", s.Kubeconfig}, s.Args...),
		Env: s.Env, Log: s.Log, ParentDeath: s.ParentDeath})
	if err != nil {
		return nil, err
	}
	if s.Ready == nil {
		return p, nil
	}
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	if err := p.WaitReady(timeout, s.Ready); err != nil {
		p.Kill()
		return nil, fmt.Errorf("waiting for %s to be ready: %w", name, err)
	}
	return p, nil
}

// Workers is ready once the manager's AgentRun workers run (the log line
// controller-runtime writes when a controller starts its workers).
func Workers() Condition { return Logged("Starting workers", `"agentrun"`) }
