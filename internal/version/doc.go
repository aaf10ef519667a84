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

// Package version owns the one version string of every exagent binary: the
// release's version and commit, injected at build time with
//
//	-ldflags "-X github.com/exagent-io/exagent/internal/version.version=v0.3.0
//	          -X github.com/exagent-io/exagent/internal/version.commit=0123abc"
//
// (make build and make release pass them from VERSION or git describe), and
// otherwise read from what the Go toolchain stamps into the binary (the
// module version of a `go install …@v0.3.0`, the VCS revision of a build
// inside a checkout). `kubectl approve version`, `manager --version`, the
// manager's first log line and its exagent_build_info metric all print Get.
// It imports nothing beyond the standard library, so the plugin stays small.
package version
