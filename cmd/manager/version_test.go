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

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/exagent-io/exagent/internal/version"
)

// TestBuildInfoMetric: exagent_build_info is 1 with the build as labels.
func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	i := version.Info{Version: "v0.3.0", Commit: "0123abc", GoVersion: "go1.26.8", Platform: "linux/amd64"}
	if err := registerBuildInfo(reg, i); err != nil {
		t.Fatal(err)
	}
	want := `# HELP exagent_build_info Always 1: the version, commit and Go version of this manager binary, as labels.
# TYPE exagent_build_info gauge
exagent_build_info{commit="0123abc",goversion="go1.26.8",version="v0.3.0"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "exagent_build_info"); err != nil {
		t.Error(err)
	}
}

// TestVersionIsInjected builds the manager the way make build and make
// release do (-ldflags -X on internal/version) and checks that --version
// and the first log line carry what was injected.
func TestVersionIsInjected(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "manager")
	pkg := "github.com/exagent-io/exagent/internal/version"
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-s -w -X "+pkg+".version=v9.8.7 -X "+pkg+".commit=c0ffee", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("manager --version: %v", err)
	}
	want := "manager v9.8.7 (commit c0ffee, " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	if string(out) != want {
		t.Errorf("manager --version = %q, want %q", out, want)
	}

	// With no cluster to reach it stops at once, but only after its first
	// log line.
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--kubeconfig", filepath.Join(t.TempDir(), "missing"), "--health-probe-bind-address=0")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("the manager started without a kubeconfig")
	}
	first, _ := bufio.NewReader(&stderr).ReadString('\n')
	var line struct {
		Msg, Version, Commit, GoVersion, Platform string
	}
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatalf("first log line %q: %v", first, err)
	}
	wantLine := struct{ Msg, Version, Commit, GoVersion, Platform string }{
		"exagent manager", "v9.8.7", "c0ffee", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH}
	if line != wantLine {
		t.Errorf("first log line = %+v, want %+v", line, wantLine)
	}
}
