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

// Package chart tests the Helm chart charts/exagent with the Helm Go SDK
// (no helm binary): rendered with the values that mean config/default,
// config/namespaced-install and config/prometheus it is the same objects
// kustomize builds from config/ (make verify runs that check, which needs no
// apiserver); with the default values it renders testdata/default.golden
// byte for byte; rendered with the default and five other value sets (one
// of them sharded) it is accepted by a real kube-apiserver in a server-side
// dry run; and it installs, upgrades (to shards too) and uninstalls there
// as Helm users expect (the CRDs of crds/ installed first and kept on
// uninstall). The Helm SDK is linked by these tests and hack/release only,
// never by the manager or the plugin.
package chart
