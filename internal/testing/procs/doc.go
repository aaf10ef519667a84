/*
Copyright 2026 The exagent Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
