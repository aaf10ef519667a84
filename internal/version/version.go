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

package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by -ldflags -X at build time (see doc.go); empty otherwise.
var (
	version string
	commit  string
)

// Unknown stand-ins, when neither -ldflags nor the toolchain said anything.
const (
	// DevVersion is the version of a build from a checkout without VERSION.
	DevVersion = "v0.0.0-dev"
	// UnknownCommit is the commit of a build outside any checkout.
	UnknownCommit = "unknown"
)

// Info is what a binary knows about its own build.
type Info struct {
	// Version is the release (a semantic version with a leading v), or what
	// git describe said for a build between releases.
	Version string `json:"version"`
	// Commit is the git commit the binary was built from; "-dirty" is
	// appended when the work tree had changes.
	Commit string `json:"commit"`
	// GoVersion is the Go toolchain that built it.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH of the binary.
	Platform string `json:"platform"`
}

// String is the one-line form: "v0.3.0 (commit 0123abc, go1.26.8, linux/amd64)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s, %s)", i.Version, i.Commit, i.GoVersion, i.Platform)
}

// Get returns this binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, bi)
}

// resolve prefers what -ldflags set, then what the toolchain stamped.
func resolve(ldVersion, ldCommit string, bi *debug.BuildInfo) Info {
	i := Info{Version: ldVersion, Commit: ldCommit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
		// "(devel)" is what a build inside the main module reports.
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		if i.Commit == "" {
			i.Commit = vcsRevision(bi)
		}
	}
	if i.Version == "" {
		i.Version = DevVersion
	}
	if i.Commit == "" {
		i.Commit = UnknownCommit
	}
	return i
}

// vcsRevision is the revision the toolchain stamped (-buildvcs), with
// "-dirty" for a modified work tree.
func vcsRevision(bi *debug.BuildInfo) string {
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" && modified {
		rev += "-dirty"
	}
	return rev
}
