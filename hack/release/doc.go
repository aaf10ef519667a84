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

// Command release assembles what make release puts in dist/ from the
// binaries the Makefile cross-compiled (dist/bin/OS_ARCH/): one archive per
// binary and platform (the binary and LICENSE), the krew manifest rendered
// from plugins/krew with the plugin archives' SHA-256, install.yaml
// (kustomize's build of config/default with the image set to the version),
// the Helm chart packaged with that version, and checksums.txt over all of
// them. It then validates the krew manifest with krew's own tools, offline:
// validate-krew-manifest for the manifest rules, and krew install
// --manifest --archive for every platform (the checksums match, the binary
// and LICENSE land where krew puts them). Everything is offline: nothing is
// downloaded or pushed.
//
//	go run ./hack/release --version v0.3.0 --dist dist --krew bin/krew \
//	  --validate-krew-manifest bin/validate-krew-manifest
package main
