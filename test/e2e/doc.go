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
