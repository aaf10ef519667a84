// Package executor owns the bounded pool that runs model and tool IO off
// the reconcile workers: a total limit and a per-endpoint limit, so one
// slow endpoint cannot take every slot. It knows nothing of runs; a job
// delivers its own result (the controller's inbox and channel source).
package executor
