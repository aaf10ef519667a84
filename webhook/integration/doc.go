// Package integration holds the admission and authorization tests of
// package webhook against a real kube-apiserver and etcd (envtest): the
// apiserver calls the webhooks over TLS, users authenticate with client
// certificates, and RBAC, SubjectAccessReview and CEL are the real ones.
package integration
