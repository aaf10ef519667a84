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
