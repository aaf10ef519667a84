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
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

var (
	assetsOnce sync.Once
	assetsDir  string
	assetsErr  error
)

// RepoRoot returns the repository root (the folder holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// BinaryAssets returns the folder with kube-apiserver, etcd and kubectl:
// KUBEBUILDER_ASSETS when set, otherwise what hack/k8s-binaries.sh prints
// (it builds the binaries on first use and reuses its cache after).
func BinaryAssets() (string, error) {
	assetsOnce.Do(func() {
		if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
			assetsDir = dir
			return
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(RepoRoot(), "hack", "k8s-binaries.sh"))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			assetsErr = fmt.Errorf("hack/k8s-binaries.sh: %w: %s", err, stderr.String())
			return
		}
		assetsDir = strings.TrimSpace(stdout.String())
	})
	return assetsDir, assetsErr
}

// Kubectl returns the path of the kubectl binary built by the hack script.
func Kubectl() (string, error) {
	dir, err := BinaryAssets()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "kubectl"), nil
}
