// Package procs is the one harness the process-level tests share (test/e2e,
// test/chaos and the controllers' process benchmark): it builds this
// module's binaries once per test binary (Builder), starts a child process
// whose output goes to a log file and whose exit one goroutine observes
// (Start), waits for it to be ready on a condition that fails fast with the
// log's tail when the process dies first (WaitReady, Listening, Logged),
// and ends it like a crashed pod (Kill: SIGKILL) or like a drained one
// (Stop: a signal, then SIGKILL after a deadline). StartDevcluster and
// StartManager are the two children every suite runs: hack/devcluster
// waited on for its ready line, cmd/manager against a kubeconfig.
//
// The Linux-only parts sit behind build tags: a child gets a signal when
// the test binary dies (Pdeathsig: a -timeout panic runs no cleanup, and no
// control plane or manager may outlive the suite), and a child's memory is
// read from /proc.
package procs
