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
	"path/filepath"
	"strings"
	"sync"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// Target is one binary of this module.
type Target struct {
	// Name is the file's name in the Builder's folder.
	Name string
	// Package is the main package, relative to the repository root.
	Package string
	// Tags are go build -tags (chaos: the manager with its failpoints).
	Tags []string
	// Flags are further go build flags (-trimpath, -ldflags=-s -w).
	Flags []string
	// Static builds with CGO_ENABLED=0, as the Dockerfile and a release do.
	Static bool
}

// The binaries the suites build. Release is what a user runs (static,
// trimmed); Image is also stripped, as the Dockerfile builds the image's
// binary, so that a memory figure is the one a user's container shows.
var (
	ManagerRelease = Target{Name: "manager", Package: "./cmd/manager", Flags: []string{"-trimpath"}, Static: true}
	ManagerImage   = Target{Name: "manager", Package: "./cmd/manager", Flags: []string{"-trimpath", "-ldflags=-s -w"}, Static: true}
	ManagerChaos   = Target{Name: "manager", Package: "./cmd/manager", Tags: []string{"chaos"}}
	Plugin         = Target{Name: "kubectl-approve", Package: "./cmd/kubectl-approve", Flags: []string{"-trimpath"}, Static: true}
	Devcluster     = Target{Name: "devcluster", Package: "./hack/devcluster", Flags: []string{"-trimpath"}, Static: true}
)

// Builder builds binaries into Dir, each Target name once for the life of
// the test binary: the suites' tests share one build.
type Builder struct {
	Dir string

	mu    sync.Mutex
	built map[string]*build
}

type build struct {
	once sync.Once
	err  error
}

// Build builds every target not built yet (in order; a failure names the
// package and carries go build's output) and returns the first's path.
func (b *Builder) Build(targets ...Target) (string, error) {
	var errs []string
	for _, t := range targets {
		if err := b.one(t); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	if len(targets) == 0 {
		return "", nil
	}
	return b.Path(targets[0].Name), nil
}

// Path is where the binary name is (or will be) built.
func (b *Builder) Path(name string) string { return filepath.Join(b.Dir, name) }

func (b *Builder) one(t Target) error {
	b.mu.Lock()
	if b.built == nil {
		b.built = map[string]*build{}
	}
	r := b.built[t.Name]
	if r == nil {
		r = &build{}
		b.built[t.Name] = r
	}
	b.mu.Unlock()
	r.once.Do(func() { r.err = goBuild(t, b.Path(t.Name)) })
	return r.err
}

func goBuild(t Target, out string) error {
	args := []string{"build"}
	if len(t.Tags) > 0 {
		args = append(args, "-tags", strings.Join(t.Tags, ","))
	}
	args = append(args, t.Flags...)
	args = append(args, "-o", out, t.Package)
	cmd := exec.Command("go", args...)
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = os.Environ()
	if t.Static {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}
