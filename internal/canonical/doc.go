// Package canonical owns how exagent turns a value into the bytes it
// hashes: RFC 8785 (JCS) canonical JSON and the sha256 forms built on it.
// Payload hashes, fingerprints and AgentRunSegment names are all computed
// here, once, so the engine, the manager, the webhook and the kubectl
// plugin agree on every hash. Pure: no IO, no clock.
package canonical
