// Package chaos is exagent's fault-injection suite (issue 9): real manager
// processes killed with SIGKILL in every window of the durability protocol,
// several managers with no leader election killed at random, an apiserver
// whose answers fail or get lost, and a control plane restarted from its
// etcd data directory.
//
// The package's non-test files are the oracles every scenario shares: tool
// and model servers that journal each request they receive (ToolServer,
// ModelServer), a recorder of every write of every run (Recorder), a fault
// injector for the manager's rest.Config (FaultInjector), and the offline
// history check (Check) that judges what they recorded. The scenarios are
// plain go tests; `make test` runs them small, `make chaos` full size.
package chaos
