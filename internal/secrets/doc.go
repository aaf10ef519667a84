// Package secrets owns how the manager reads the Secret keys an Agent
// references (model keys, tool headers, notification signing keys): one
// key at a time, past the cache. The manager never caches or watches every
// Secret of the cluster: in a shared cluster that would be every tenant's
// credentials in one process's memory.
package secrets
