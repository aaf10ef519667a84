// Package executor owns the bounded pool that runs model and tool IO off
// the reconcile workers: a total limit and a per-endpoint limit, so one
// slow endpoint cannot take every slot. It knows nothing of runs; a job
// delivers its own result (the controller's inbox and channel source).
// Endpoint names come from Agents, so an endpoint's bucket lives only
// while a job waits on it or runs in it: memory follows the work in
// flight, never the number of endpoints ever seen.
package executor
