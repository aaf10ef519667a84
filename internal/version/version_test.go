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
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/exagent-io/exagent", Version: "(devel)"},
		Settings:  []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "false"}},
	}
	dirty := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}}
	installed := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/exagent-io/exagent", Version: "v0.3.0"}}
	tests := map[string]struct {
		ldVersion, ldCommit string
		bi                  *debug.BuildInfo
		want                Info
	}{
		"ldflags win": {ldVersion: "v0.3.0", ldCommit: "feedbeef", bi: stamped,
			want: Info{Version: "v0.3.0", Commit: "feedbeef", GoVersion: "go1.26.8", Platform: platform}},
		"a checkout without ldflags": {bi: stamped,
			want: Info{Version: DevVersion, Commit: "0123abcd", GoVersion: "go1.26.8", Platform: platform}},
		"a modified checkout": {ldVersion: "v0.3.0-2-g0123abc-dirty", bi: dirty,
			want: Info{Version: "v0.3.0-2-g0123abc-dirty", Commit: "0123abcd-dirty", GoVersion: "go1.26.8", Platform: platform}},
		"go install @v0.3.0": {bi: installed,
			want: Info{Version: "v0.3.0", Commit: UnknownCommit, GoVersion: "go1.26.8", Platform: platform}},
		"nothing known": {
			want: Info{Version: DevVersion, Commit: UnknownCommit, GoVersion: runtime.Version(), Platform: platform}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, resolve(tc.ldVersion, tc.ldCommit, tc.bi)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestString(t *testing.T) {
	got := Info{Version: "v0.3.0", Commit: "0123abc", GoVersion: "go1.26.8", Platform: "linux/amd64"}.String()
	if want := "v0.3.0 (commit 0123abc, go1.26.8, linux/amd64)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
