//go:build upgrade

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

package upgrade

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// The last release. The repository carries no tags, so the release is
// pinned by commit: 16b22cd is the merge of issue 26 ("merge install")
// that made v0.3.0 — its CHANGELOG.md has the v0.3.0 section and
// config/default runs ghcr.io/exagent-io/exagent:v0.3.0. A clone without
// that history (a shallow one) cannot run this test; CI clones with it.
const (
	releaseVersion = "v0.3.0"
	releaseCommit  = "16b22cd"
)

// release is the last release's binaries and the part of its tree its
// devcluster reads (config/: CRDs, RBAC, webhook configuration), built
// once per commit into the cache and reused.
type release struct {
	// Commit is the full commit the binaries were built from.
	Commit string
	// Manager and Devcluster are the built binaries.
	Manager, Devcluster string
	// Root is the --root of the release's devcluster: a copy of the
	// release's config/ (the worktree it was built in is removed).
	Root string
}

// cacheRoot is where hack/k8s-binaries.sh caches too.
func cacheRoot() (string, error) {
	if d := os.Getenv("EXAGENT_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "exagent"), nil
}

// buildRelease returns the release at commit, building it first when the
// cache has no complete build of it: a detached git worktree of this
// repository at commit, go build of cmd/manager and hack/devcluster there
// (as make release builds them: static, trimmed, the version stamped), a
// copy of its config/, then the worktree is removed. A build is written
// under a temporary name and renamed into place, so an interrupted build
// is never taken for a complete one.
func buildRelease(commit, version string) (release, error) {
	root := testenv.RepoRoot()
	out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", commit+"^{commit}").CombinedOutput()
	if err != nil {
		return release{}, fmt.Errorf("release %s (commit %s) is not in this clone's history (a shallow clone?): %v\n%s",
			version, commit, err, out)
	}
	full := strings.TrimSpace(string(out))
	cache, err := cacheRoot()
	if err != nil {
		return release{}, err
	}
	dir := filepath.Join(cache, "upgrade", full)
	r := release{Commit: full, Manager: filepath.Join(dir, "manager"), Devcluster: filepath.Join(dir, "devcluster"),
		Root: filepath.Join(dir, "root")}
	if complete(r) {
		return r, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return release{}, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), full+".build-")
	if err != nil {
		return release{}, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := buildIn(root, full, version, tmp); err != nil {
		return release{}, err
	}
	_ = os.RemoveAll(dir) // an incomplete build left by a crash
	if err := os.Rename(tmp, dir); err != nil {
		return release{}, err
	}
	if !complete(r) {
		return release{}, fmt.Errorf("the build of %s in %s is incomplete", version, dir)
	}
	return r, nil
}

// buildIn builds the release at commit into tmp (manager, devcluster,
// root/config) from a detached worktree at tmp/src, removed before it
// returns.
func buildIn(repo, commit, version, tmp string) (err error) {
	src := filepath.Join(tmp, "src")
	if out, err := exec.Command("git", "-C", repo, "worktree", "add", "--detach", src, commit).CombinedOutput(); err != nil {
		return fmt.Errorf("git worktree add %s: %v\n%s", commit, err, out)
	}
	defer func() {
		if out, rerr := exec.Command("git", "-C", repo, "worktree", "remove", "--force", src).CombinedOutput(); rerr != nil && err == nil {
			err = fmt.Errorf("git worktree remove %s: %v\n%s", src, rerr, out)
		}
	}()
	ldflags := fmt.Sprintf("-X github.com/exagent-io/exagent/internal/version.version=%s -X github.com/exagent-io/exagent/internal/version.commit=%s",
		version, commit)
	for _, b := range []struct{ out, pkg string }{
		{filepath.Join(tmp, "manager"), "./cmd/manager"},
		{filepath.Join(tmp, "devcluster"), "./hack/devcluster"},
	} {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", b.out, b.pkg)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s of %s: %v\n%s", b.pkg, version, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(tmp, "root"), 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-R", filepath.Join(src, "config"), filepath.Join(tmp, "root", "config")).CombinedOutput(); err != nil {
		return fmt.Errorf("copying config/ of %s: %v\n%s", version, err, out)
	}
	return nil
}

func complete(r release) bool {
	for _, p := range []string{r.Manager, r.Devcluster, filepath.Join(r.Root, "config", "crd", "bases")} {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}
