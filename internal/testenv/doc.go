// Package testenv starts the real kube-apiserver and etcd for integration
// tests (controller-runtime's envtest) with the binaries built by
// hack/k8s-binaries.sh, found without the user exporting anything, and the
// project's CRDs installed.
package testenv
