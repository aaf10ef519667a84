// Package pool owns the one way the manager's own worker pools drain
// their queues (the notification deliverer, the reaper, the deletion of
// deleted runs' dependents): n goroutines until the manager stops, then
// the queue shut down and every worker waited for.
package pool
