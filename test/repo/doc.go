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

// Package repo holds the checks `make verify` runs on the repository
// itself rather than on the code: no tracked file is a build output (none
// over 1 MiB), every Go file carries hack/boilerplate.go.txt, and every
// link of the README and the guides resolves inside the repository. They
// read the tracked files (git ls-files) and need no apiserver.
package repo
