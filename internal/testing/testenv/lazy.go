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

package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Lazy is an Env started the first time a test asks for it, so that the
// tests of a package that need no apiserver (`go test -run TestUnit`) run
// without starting one. A package's TestMain is Main (or m.Run, then Stop).
type Lazy struct {
	// Options are the Env's.
	Options Options
	// Setup, when set, runs once right after the start (users, RBAC, …).
	Setup func(*Env) error

	once sync.Once
	env  *Env
	err  error
}

// Get returns the Env, starting it (and running Setup) on the first call.
// A start that fails ends the test binary, as a failed start in TestMain
// did: no test that needs the apiserver can run without it.
func (l *Lazy) Get() *Env {
	l.once.Do(func() {
		env, err := Start(l.Options)
		if err == nil && l.Setup != nil {
			if err = l.Setup(env); err != nil {
				_ = env.Stop()
				err = fmt.Errorf("setting the control plane up: %w", err)
			}
		}
		l.env, l.err = env, err
	})
	if l.err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", l.err)
		os.Exit(1)
	}
	return l.env
}

// Stop stops the Env if a test started it.
func (l *Lazy) Stop() error {
	var stop bool
	l.once.Do(func() {}) // no start from now on
	stop = l.err == nil && l.env != nil
	if !stop {
		return nil
	}
	return l.env.Stop()
}

// Main is a package's TestMain: it runs the tests, stops the Env if one of
// them started it, and exits with the tests' code (a failed stop is
// reported, not counted: every test has had its answer).
func (l *Lazy) Main(m *testing.M) {
	code := m.Run()
	if err := l.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
	os.Exit(code)
}
