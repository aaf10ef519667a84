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
	"strings"
)

// platform is one GOOS/GOARCH target.
type platform struct{ OS, Arch string }

func parsePlatform(s string) (platform, error) {
	os, arch, ok := strings.Cut(s, "/")
	if !ok || os == "" || arch == "" {
		return platform{}, fmt.Errorf("platform %q: want OS/ARCH", s)
	}
	return platform{OS: os, Arch: arch}, nil
}

// dir is the folder of the platform's binaries under DIST/bin, and the
// suffix of its archives.
func (p platform) dir() string { return p.OS + "_" + p.Arch }

// exe is the binary's file name on the platform.
func (p platform) exe(name string) string {
	if p.OS == "windows" {
		return name + ".exe"
	}
	return name
}

// archiveName is NAME_VERSION_OS_ARCH.tar.gz, the name the krew template's
// URIs use for the plugin.
func archiveName(bin, version string, p platform) string {
	return fmt.Sprintf("%s_%s_%s.tar.gz", bin, version, p.dir())
}
