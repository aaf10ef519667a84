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
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// semver is a release version: vMAJOR.MINOR.PATCH, with an optional
// pre-release (v0.3.0-rc.1).
var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)

// options are the flags.
type options struct {
	Version   string
	Dist      string
	Root      string
	Platforms []platform
	Krew      string
	Validator string
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release: error:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	var o options
	var platforms string
	fs.StringVar(&o.Version, "version", "", "The release version, vX.Y.Z.")
	fs.StringVar(&o.Dist, "dist", "dist", "Folder of the artifacts; the binaries are in DIST/bin/OS_ARCH.")
	fs.StringVar(&o.Root, "root", ".", "The repository root.")
	fs.StringVar(&platforms, "platforms", "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64", "OS/ARCH pairs, space-separated.")
	fs.StringVar(&o.Krew, "krew", "", "krew, to install the plugin from its manifest and archives (offline) for every platform.")
	fs.StringVar(&o.Validator, "validate-krew-manifest", "", "krew's validate-krew-manifest, to check the manifest against krew's rules.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !semver.MatchString(o.Version) {
		return fmt.Errorf("--version %q: want vX.Y.Z (a semantic version with a leading v)", o.Version)
	}
	for _, p := range strings.Fields(platforms) {
		parsed, err := parsePlatform(p)
		if err != nil {
			return err
		}
		o.Platforms = append(o.Platforms, parsed)
	}
	if o.Krew == "" || o.Validator == "" {
		return errors.New("--krew and --validate-krew-manifest are required: the krew manifest is validated before it is released")
	}
	return release(o)
}

// release writes every artifact, then the checksums, then validates.
func release(o options) error {
	license := filepath.Join(o.Root, "LICENSE")
	var artifacts []string
	plugin := map[platform]string{} // the plugin's archive per platform
	for _, p := range o.Platforms {
		for _, bin := range []string{"manager", "kubectl-approve"} {
			src := filepath.Join(o.Dist, "bin", p.dir(), p.exe(bin))
			name := archiveName(bin, o.Version, p)
			if err := writeArchive(filepath.Join(o.Dist, name), src, p.exe(bin), license); err != nil {
				return err
			}
			artifacts = append(artifacts, name)
			if bin == "kubectl-approve" {
				plugin[p] = filepath.Join(o.Dist, name)
			}
		}
	}
	sums, err := checksums(o.Dist, artifacts)
	if err != nil {
		return err
	}
	tmpl, err := os.ReadFile(filepath.Join(o.Root, "plugins", "krew", "approve.yaml.tmpl"))
	if err != nil {
		return fmt.Errorf("reading the krew template: %w", err)
	}
	manifest, err := renderKrew(string(tmpl), o.Version, sums)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.Dist, krewManifestName), []byte(manifest), 0o644); err != nil {
		return err
	}
	artifacts = append(artifacts, krewManifestName)
	if err := writeInstallYAML(o.Root, filepath.Join(o.Dist, installYAMLName), o.Version); err != nil {
		return err
	}
	artifacts = append(artifacts, installYAMLName)
	chart, err := packageChart(filepath.Join(o.Root, "charts", "exagent"), o.Dist, o.Version)
	if err != nil {
		return err
	}
	artifacts = append(artifacts, chart)
	if _, err := writeChecksums(o.Dist, artifacts); err != nil {
		return err
	}
	return validateKrew(o.Validator, o.Krew, filepath.Join(o.Dist, krewManifestName), plugin)
}
