//go:build scale

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

package scale

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// The size of the run and its windows. The defaults are the published
// full size (docs/operating.md "Scale test"); a development run passes
// smaller ones through SCALE_ARGS.
var (
	flagEnded      = flag.Int("scale.ended", 40000, "Runs that end Succeeded at once (their model answers with a final text).")
	flagWaiting    = flag.Int("scale.waiting", 9000, "Runs left AwaitingApproval on a tool call whose rule asks a person.")
	flagRunning    = flag.Int("scale.running", 1000, "Runs kept Running against the slow model through an idempotent, auto-approved http tool.")
	flagShards     = flag.Int("scale.shards", 3, "Shards (one manager each); the manager's --shards list is shard-0…shard-N-1.")
	flagNamespaces = flag.Int("scale.namespaces", 10, "Namespaces the runs are spread over (round robin).")
	flagCreators   = flag.Int("scale.creators", 16, "Concurrent clients creating runs in the burst (more only queue at the apiserver: 48 starved its watch cache and the managers' Lease renewals on 2 cores).")
	flagModelMin   = flag.Duration("scale.model-min", time.Second, "Shortest answer time of the slow model (the running runs' model).")
	flagModelMax   = flag.Duration("scale.model-max", 2*time.Second, "Longest answer time of the slow model; each answer takes a stable pseudo-random time between the two.")
	flagWarmup     = flag.Duration("scale.warmup", 20*time.Second, "How long the running runs go on after a change of managers before a window is measured.")
	flagWindow     = flag.Duration("scale.window", 60*time.Second, "Length of each steady-throughput window (sharded, unsharded, sharded again).")
	flagStartStall = flag.Duration("scale.start-stall", time.Minute, "Stop waiting for the running runs to start once none has started for this long (the managers keep the rest queued).")
	flagApprove    = flag.Int("scale.approve", 300, "Approvals a person makes, for the killed shard's waiting runs, during its manager's outage.")
	flagLease      = flag.Duration("scale.lease", 30*time.Second, "spec.leaseDuration of every run (the failover target is this plus 10 s).")
	flagUnsharded  = flag.Bool("scale.unsharded", true, "Measure one unsharded manager on the same load between the two sharded windows.")
	flagReconciles = flag.Int("scale.max-concurrent-reconciles", 32, "Every manager's --max-concurrent-reconciles (docs/sizing.md: 32 for thousands of runs).")
	flagListRuns   = flag.Int("scale.list-repeats", 3, "How many times kubectl approve list -A and the inbox page are timed (the report keeps the median).")
	flagReport     = flag.String("scale.report", "", "Where the markdown report is written (default REPO/bin/scale/report.md).")
)

// sizes are the run's flags, checked.
type sizes struct {
	ended, waiting, running, shards, namespaces, creators, approve int
}

func readSizes() (sizes, error) {
	s := sizes{ended: *flagEnded, waiting: *flagWaiting, running: *flagRunning, shards: *flagShards,
		namespaces: *flagNamespaces, creators: *flagCreators, approve: *flagApprove}
	switch {
	case s.ended < 0 || s.waiting < 0 || s.running < 1:
		return s, fmt.Errorf("-scale.ended %d, -scale.waiting %d, -scale.running %d: want ≥ 0, ≥ 0, ≥ 1", s.ended, s.waiting, s.running)
	case s.shards < 2:
		return s, fmt.Errorf("-scale.shards %d: want at least 2 (one is killed)", s.shards)
	case s.namespaces < 1 || s.creators < 1:
		return s, fmt.Errorf("-scale.namespaces %d, -scale.creators %d: want ≥ 1", s.namespaces, s.creators)
	case *flagModelMin <= 0 || *flagModelMax < *flagModelMin:
		return s, fmt.Errorf("-scale.model-min %s, -scale.model-max %s: want 0 < min ≤ max", *flagModelMin, *flagModelMax)
	case *flagLease < 5*time.Second:
		return s, fmt.Errorf("-scale.lease %s: admission refuses less than 5s", *flagLease)
	}
	return s, nil
}

func (s sizes) total() int { return s.ended + s.waiting + s.running }

func (s sizes) String() string {
	return fmt.Sprintf("%d runs (%d ended, %d waiting, %d running) in %d namespaces, %d shards",
		s.total(), s.ended, s.waiting, s.running, s.namespaces, s.shards)
}

// reportPath is where the report goes.
func reportPath() string {
	if *flagReport != "" {
		return *flagReport
	}
	return filepath.Join(testenv.RepoRoot(), "bin", "scale", "report.md")
}

func TestMain(m *testing.M) {
	flag.Parse()
	// The managers are processes with their own logs; this process logs
	// only what its own clients report, when asked.
	if os.Getenv("EXAGENT_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	}
	os.Exit(m.Run())
}
