// Command devcluster is exagent's local control plane (docs/architecture.md §9): it
// starts the real kube-apiserver and etcd built by hack/k8s-binaries.sh on
// loopback, installs the CRDs, the shipped ClusterRoles and the admission
// webhook configuration (pointed at the manager on 127.0.0.1 with a
// self-signed CA), writes an admin kubeconfig and one per --user, prints
// "ready: KUBECONFIG=DIR/kubeconfig" and serves until SIGINT or SIGTERM.
//
// The manager is deliberately not started here: it runs as its own process
// against DIR/kubeconfig so that it can be killed and restarted like a pod.
package main
