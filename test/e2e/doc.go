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

// Package e2e tests exagent as its users meet it: the real kubectl (built
// by hack/k8s-binaries.sh) with the kubectl-approve plugin on PATH, against
// hack/devcluster and the manager running as separate processes, as real
// client-certificate users under real RBAC. It also checks the packaging:
// `kustomize build config/default` passes a server-side dry run, the
// manager builds as a static binary, the krew manifest renders.
//
// The tests run in sequence (one control plane, one manager process that
// the restart test kills and replaces); each uses its own namespace.
package e2e
