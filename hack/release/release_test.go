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
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// repoRoot is two folders above this file.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// tool is a binary the Makefile pins into ./bin, installed with make when
// missing (as test/e2e finds kustomize).
func tool(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(repoRoot(t), "bin", name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("make", name)
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", name, err, out)
	}
	return bin
}

var allPlatforms = []platform{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}, {"windows", "arm64"},
}

// pluginArchives writes a stand-in plugin binary per platform and its
// archive, as make release does with the real ones.
func pluginArchives(t *testing.T, dist, version string) (map[platform]string, map[string]string) {
	t.Helper()
	archives := map[platform]string{}
	var names []string
	for _, p := range allPlatforms {
		bin := filepath.Join(dist, "bin", p.dir(), p.exe("kubectl-approve"))
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, []byte("#!/bin/sh\necho kubectl-approve "+p.dir()+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		name := archiveName("kubectl-approve", version, p)
		if err := writeArchive(filepath.Join(dist, name), bin, p.exe("kubectl-approve"), filepath.Join(repoRoot(t), "LICENSE")); err != nil {
			t.Fatal(err)
		}
		archives[p] = filepath.Join(dist, name)
		names = append(names, name)
	}
	sums, err := checksums(dist, names)
	if err != nil {
		t.Fatal(err)
	}
	return archives, sums
}

// TestKrewManifest renders plugins/krew/approve.yaml.tmpl with the
// checksums of one archive per release platform and has krew's own tools
// judge it: validate-krew-manifest (krew's manifest rules) and krew install
// from the manifest and each local archive (the checksum matches, the
// binary and LICENSE are installed). A changed archive is refused.
func TestKrewManifest(t *testing.T) {
	const version = "v1.2.3"
	dist := t.TempDir()
	archives, sums := pluginArchives(t, dist, version)
	tmpl, err := os.ReadFile(filepath.Join(repoRoot(t), "plugins", "krew", "approve.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := renderKrew(string(tmpl), version, sums)
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dist, krewManifestName)
	if err := os.WriteFile(manifest, []byte(rendered), 0o644); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Metadata struct{ Name string }
		Spec     struct {
			Version   string
			Platforms []struct{ URI, Sha256, Bin string }
		}
	}
	if err := yaml.Unmarshal([]byte(rendered), &m); err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Name != "approve" || m.Spec.Version != version || len(m.Spec.Platforms) != len(allPlatforms) {
		t.Errorf("manifest %s %s with %d platforms, want approve %s with %d", m.Metadata.Name, m.Spec.Version, len(m.Spec.Platforms), version, len(allPlatforms))
	}
	for _, p := range m.Spec.Platforms {
		name := p.URI[strings.LastIndex(p.URI, "/")+1:]
		if p.URI != "https://github.com/exagent-io/exagent/releases/download/"+version+"/"+name || sums[name] != p.Sha256 {
			t.Errorf("platform %s: sha256 %s, want the archive's %s", p.URI, p.Sha256, sums[name])
		}
	}

	if err := validateKrew(tool(t, "validate-krew-manifest"), tool(t, "krew"), manifest, archives); err != nil {
		t.Fatal(err)
	}

	t.Run("a changed archive is refused", func(t *testing.T) {
		p := platform{"linux", "amd64"}
		f, err := os.OpenFile(archives[p], os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write([]byte{0})
		_ = f.Close()
		err = validateKrew(tool(t, "validate-krew-manifest"), tool(t, "krew"), manifest, map[platform]string{p: archives[p]})
		if err == nil || !strings.Contains(err.Error(), "linux/amd64") {
			t.Errorf("err = %v, want krew to refuse the linux/amd64 archive", err)
		}
	})
}

// TestRenderKrewRefuses: a template platform without an archive, an
// archive without a template platform, and a placeholder left over.
func TestRenderKrewRefuses(t *testing.T) {
	sums := map[string]string{"kubectl-approve_v1.0.0_linux_amd64.tar.gz": strings.Repeat("a", 64)}
	for name, tc := range map[string]struct {
		tmpl string
		want string
	}{
		"no archive for a platform":  {tmpl: "uri: x/kubectl-approve_v1.0.0_linux_amd64.tar.gz\nsha256: {{SHA256_linux_amd64}}\nsha256: {{SHA256_linux_arm64}}\n", want: "linux/arm64"},
		"no platform for an archive": {tmpl: "version: {{VERSION}}\n", want: "kubectl-approve_v1.0.0_linux_amd64.tar.gz has no platform"},
		"a placeholder left":         {tmpl: "uri: x/kubectl-approve_v1.0.0_linux_amd64.tar.gz\n{{OTHER}}\n", want: "placeholder left"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := renderKrew(tc.tmpl, "v1.0.0", sums); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one with %q", err, tc.want)
			}
		})
	}
}

// TestArchive: an archive holds the binary (executable) and LICENSE, and
// packing the same files again gives the same bytes (the checksums only
// change when a binary does).
func TestArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kubectl-approve.exe")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	license := filepath.Join(repoRoot(t), "LICENSE")
	a, b := filepath.Join(dir, "a.tar.gz"), filepath.Join(dir, "b.tar.gz")
	for _, dst := range []string{a, b} {
		if err := writeArchive(dst, bin, "kubectl-approve.exe", license); err != nil {
			t.Fatal(err)
		}
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Error("the same files packed twice differ")
	}
	gz, err := gzip.NewReader(bytes.NewReader(ab))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	got := map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h.Mode
	}
	if diff := cmp.Diff(map[string]int64{"kubectl-approve.exe": 0o755, "LICENSE": 0o644}, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// TestInstallYAML: install.yaml is config/default with the manager image
// tagged with the version.
func TestInstallYAML(t *testing.T) {
	dst := filepath.Join(t.TempDir(), installYAMLName)
	if err := writeInstallYAML(repoRoot(t), dst, "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	kinds := map[string]int{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		kinds[u.GetKind()]++
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		for _, c := range cs {
			images = append(images, c.(map[string]any)["image"].(string))
		}
	}
	if diff := cmp.Diff([]string{"ghcr.io/exagent-io/exagent:v1.2.3"}, images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
	if kinds["CustomResourceDefinition"] != crdCount(t) || kinds["Deployment"] != 1 || kinds["MutatingWebhookConfiguration"] != 1 {
		t.Errorf("kinds %v: not config/default", kinds)
	}
}

// TestPackageChart: the packaged chart carries the release's version, its
// appVersion is the image tag, and it holds the CRDs.
func TestPackageChart(t *testing.T) {
	dist := t.TempDir()
	name, err := packageChart(filepath.Join(repoRoot(t), "charts", "exagent"), dist, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if name != "exagent-1.2.3.tgz" {
		t.Errorf("chart file %s", name)
	}
	c, err := loader.Load(filepath.Join(dist, name))
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Version != "1.2.3" || c.Metadata.AppVersion != "v1.2.3" || len(c.CRDObjects()) != crdCount(t) {
		t.Errorf("packaged chart %s appVersion %s with %d CRDs", c.Metadata.Version, c.Metadata.AppVersion, len(c.CRDObjects()))
	}
}

// TestRefusesAVersion: only a semantic version is released.
func TestRefusesAVersion(t *testing.T) {
	for _, v := range []string{"", "0.3.0", "v0.3", "latest", "v0.3.0+build"} {
		if err := run([]string{"--version", v, "--krew", "k", "--validate-krew-manifest", "v"}); err == nil || !strings.Contains(err.Error(), "--version") {
			t.Errorf("--version %q: err = %v", v, err)
		}
	}
}

// crdCount is how many CRDs the repository generates (config/crd/bases).
func crdCount(t *testing.T) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(repoRoot(t), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	return len(m)
}
