// Package loop is the pure durable engine of an agent run: the state machine
// of DESIGN.md §3 as functions over data, policy evaluation, canonical
// hashing, the ledger and the loop driver. It never does IO, never reads a
// clock (every function takes now) and never imports a Kubernetes client:
// controllers read the run, call the engine, and commit what it returns with
// compare-and-swap.
//
// The state is v1alpha1.AgentRunStatus itself, so the JSON a controller
// stores is exactly the continuation the engine resumes from.
package loop
