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

// Package served owns which namespaces one manager serves
// (--watch-namespaces): the parsed, validated set, the cache setting that
// confines every informer to it, and the start-up check that the manager
// holds its rights there. Empty means every namespace (the cluster-wide
// install, config/default); set, the manager reads and writes nothing in
// another tenant namespace — its own namespace (Lease, decision-seal
// Secret, egress ConfigMap) is reached through objects named by their own
// flags, never through this set (docs/install.md, "Namespace-scoped
// install").
package served
