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

package chaos

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/exagent-io/exagent/internal/testing/procs"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

var (
	fullFlag = flag.Bool("chaos.full", false, "Run every scenario at full size (also CHAOS_FULL=1); the default is the small size `make test` runs.")
	seedFlag = flag.Int64("chaos.seed", 0, "Seed of every random choice (kills, faults); 0 picks one from the clock. A failure prints it for replay.")
)

// size is one scenario's scale.
type size struct {
	// R2: runs, batch of concurrent creations, how long managers are killed.
	managersRuns, batch int
	killFor             time.Duration
	// R3: runs under apiserver faults.
	faultRuns int
	// R5: runs of each kind (paused, mid tool call, mid model request).
	restartRuns int
	// R6: the ordinary tenant's runs per phase and the clients that keep
	// them going (each creates a run and waits for its end); the hostile
	// tenant's runs on a hanging MCP server, and its clients of
	// huge-answer runs, redirecting runs and delegation trees.
	tenantRuns, tenantClients                            int
	hangingRuns, hugeClients, exfilClients, hydraClients int
	// R7: conversations and the turns of each.
	convs, convTurns int
	// R8: trigger events, their dedup keys, the concurrent senders and
	// the events sent a second; schedule ticks with kills aimed at them.
	triggerEvents, triggerKeys, triggerSenders, triggerRate, ticks int
}

func sizes() size {
	if *fullFlag || os.Getenv("CHAOS_FULL") == "1" {
		return size{managersRuns: 300, batch: 25, killFor: 3 * time.Minute, faultRuns: 100, restartRuns: 10,
			tenantRuns: 100, tenantClients: 8, hangingRuns: 32, hugeClients: 4, exfilClients: 2, hydraClients: 2,
			convs: 10, convTurns: 5, triggerEvents: 3000, triggerKeys: 50, triggerSenders: 8, triggerRate: 100, ticks: 3}
	}
	return size{managersRuns: 30, batch: 10, killFor: 20 * time.Second, faultRuns: 16, restartRuns: 2,
		tenantRuns: 20, tenantClients: 4, hangingRuns: 8, hugeClients: 2, exfilClients: 1, hydraClients: 1,
		convs: 4, convTurns: 3, triggerEvents: 300, triggerKeys: 20, triggerSenders: 4, triggerRate: 30, ticks: 1}
}

func seed() int64 {
	seedOnce.Do(func() {
		seedValue = *seedFlag
		if seedValue == 0 {
			seedValue = time.Now().UnixNano() % 1_000_000_007
		}
	})
	return seedValue
}

var (
	seedOnce  sync.Once
	seedValue int64
)

// suite is what every scenario shares: the built binaries and, started on
// first use, one control plane with an admission webhook server.
var suite struct {
	root, work, bin, k8sBin string
	build                   procs.Builder

	buildOnce sync.Once
	buildErr  error

	sharedOnce sync.Once
	shared     *cluster
	sharedErr  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("EXAGENT_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	}
	work, err := os.MkdirTemp("", "exagent-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	suite.root, suite.work, suite.bin = testenv.RepoRoot(), work, filepath.Join(work, "bin")
	suite.build.Dir = suite.bin
	code := m.Run()
	if suite.shared != nil {
		if err := suite.shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "chaos teardown:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	if code == 0 && os.Getenv("CHAOS_KEEP") == "" {
		_ = os.RemoveAll(work)
	} else {
		fmt.Fprintf(os.Stderr, "chaos: logs kept in %s (seed %d)\n", work, seed())
	}
	os.Exit(code)
}

// binaries builds, once, the manager with its failpoints (-tags chaos) and
// devcluster; the tests themselves need no tag.
func binaries(t *testing.T) {
	t.Helper()
	suite.buildOnce.Do(func() {
		suite.k8sBin, suite.buildErr = testenv.BinaryAssets()
		if suite.buildErr != nil {
			return
		}
		_, suite.buildErr = suite.build.Build(procs.ManagerChaos, procs.Devcluster)
	})
	if suite.buildErr != nil {
		t.Fatalf("building the chaos binaries: %v", suite.buildErr)
	}
}

// sharedCluster is the control plane of R1–R3, with the admission webhooks
// served in this process (the managers run with --enable-webhooks=false,
// so that any of them can be killed without closing admission).
func sharedCluster(t *testing.T) *cluster {
	t.Helper()
	binaries(t)
	suite.sharedOnce.Do(func() {
		suite.shared, suite.sharedErr = startCluster(filepath.Join(suite.work, "shared"), "")
		if suite.sharedErr == nil {
			suite.sharedErr = suite.shared.serveWebhooks()
		}
	})
	if suite.sharedErr != nil {
		t.Fatalf("starting the shared control plane: %v", suite.sharedErr)
	}
	return suite.shared
}
