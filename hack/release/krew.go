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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// krewManifestName is the rendered manifest: krew names a plugin's
// manifest after the plugin (validate-krew-manifest checks it).
const krewManifestName = "approve.yaml"

// shaPlaceholder is {{SHA256_OS_ARCH}} in plugins/krew/approve.yaml.tmpl.
var shaPlaceholder = regexp.MustCompile(`\{\{SHA256_([a-z0-9]+)_([a-z0-9]+)\}\}`)

// renderKrew fills the template's {{VERSION}} and each {{SHA256_OS_ARCH}}
// with the SHA-256 of that platform's plugin archive (sums, by archive
// name). A placeholder with no archive, or one left over, is an error.
func renderKrew(tmpl, version string, sums map[string]string) (string, error) {
	out := strings.ReplaceAll(tmpl, "{{VERSION}}", version)
	var missing []string
	out = shaPlaceholder.ReplaceAllStringFunc(out, func(m string) string {
		sub := shaPlaceholder.FindStringSubmatch(m)
		sum, ok := sums[archiveName("kubectl-approve", version, platform{OS: sub[1], Arch: sub[2]})]
		if !ok {
			missing = append(missing, sub[1]+"/"+sub[2])
			return m
		}
		return sum
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("the krew template names platforms no plugin archive was built for: %s", strings.Join(missing, ", "))
	}
	if i := strings.Index(out, "{{"); i >= 0 {
		return "", fmt.Errorf("the krew template has a placeholder left after rendering: %q", out[i:min(len(out), i+40)])
	}
	for name := range sums {
		if strings.HasPrefix(name, "kubectl-approve_") && !strings.Contains(out, "/"+name+"\n") {
			return "", fmt.Errorf("plugin archive %s has no platform in the krew template", name)
		}
	}
	return out, nil
}

// validateKrew checks the manifest with krew's validate-krew-manifest (the
// rules of krew's index: name, version, platforms that match a supported
// OS/arch and do not overlap, …), then installs the plugin with krew from
// the manifest and each platform's local archive — which checks the
// archive's SHA-256 against the manifest and that the binary and LICENSE
// are where krew expects them.
func validateKrew(validator, krew, manifest string, archives map[platform]string) error {
	out, err := exec.Command(validator, "-manifest", manifest, "-skip-install").CombinedOutput()
	if err != nil {
		return fmt.Errorf("validate-krew-manifest %s: %w\n%s", manifest, err, out)
	}
	for p, archive := range archives {
		root, err := os.MkdirTemp("", "krew-root-")
		if err != nil {
			return err
		}
		err = krewInstall(krew, root, manifest, archive, p)
		_ = os.RemoveAll(root)
		if err != nil {
			return err
		}
	}
	return nil
}

func krewInstall(krew, root, manifest, archive string, p platform) error {
	cmd := exec.Command(krew, "install", "--manifest="+manifest, "--archive="+archive)
	cmd.Env = append(os.Environ(), "KREW_ROOT="+root, "KREW_OS="+p.OS, "KREW_ARCH="+p.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("krew install for %s/%s from %s: %w\n%s", p.OS, p.Arch, filepath.Base(archive), err, out)
	}
	var found []string
	_ = filepath.Walk(filepath.Join(root, "store"), func(path string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			found = append(found, fi.Name())
		}
		return nil
	})
	for _, want := range []string{p.exe("kubectl-approve"), "LICENSE"} {
		if !contains(found, want) {
			return fmt.Errorf("krew install for %s/%s from %s: no %s among the installed files %v", p.OS, p.Arch, filepath.Base(archive), want, found)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
