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
	"context"
	"errors"
	"net"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Condition is what a readiness wait polls: true once the process is
// ready, an error when it never will be.
type Condition func(*Process) (bool, error)

// WaitReady polls ready until it holds, fails, the process exits (an
// error with its exit and the tail of its log) or timeout passes.
func (p *Process) WaitReady(timeout time.Duration, ready Condition) error {
	return Poll(timeout, func() (bool, error) {
		if err := p.Alive(); err != nil {
			return false, err
		}
		return ready(p)
	})
}

// Listening is ready once addr accepts TCP connections (a webhook server).
func Listening(addr string) Condition {
	return func(*Process) (bool, error) { return Dial(addr), nil }
}

// Logged is ready once one line of the log has every one of parts.
func Logged(parts ...string) Condition {
	return func(p *Process) (bool, error) { return p.LogContains(parts...), nil }
}

// Dial reports whether addr accepts a TCP connection now.
func Dial(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// Poll calls cond every 100ms until it is true, returns an error, or the
// deadline passes ("not within …").
func Poll(timeout time.Duration, cond func() (bool, error)) error {
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond() })
	if wait.Interrupted(err) {
		return errors.New("not within " + timeout.String())
	}
	return err
}
