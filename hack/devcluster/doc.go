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

// Command devcluster is exagent's local control plane (docs/architecture.md §9): it
// starts the real kube-apiserver and etcd built by hack/k8s-binaries.sh on
// loopback, installs the CRDs, the shipped ClusterRoles and the admission
// webhook configuration (pointed at the manager on 127.0.0.1 with a
// self-signed CA; the apiserver calls it with a client certificate whose CA
// is DIR/webhook/client-ca.crt, the manager's --webhook-client-ca), writes
// an admin kubeconfig and one per --user, prints
// "ready: KUBECONFIG=DIR/kubeconfig" and serves until SIGINT or SIGTERM.
//
// The manager is deliberately not started here: it runs as its own process
// so that it can be killed and restarted like a pod, with its own identity
// — DIR/manager.kubeconfig, the user of its ServiceAccount
// (exagent-system/exagent-manager) bound to config/rbac's roles as on a
// cluster — so that the admin of DIR/kubeconfig is a person who may decide.
package main
