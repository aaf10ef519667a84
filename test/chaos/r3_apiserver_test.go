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
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/testing/testenv"
	"github.com/exagent-io/exagent/store"
)

// faultRate is the share of apiserver requests R3 fails.
const faultRate = 0.10

// testApiserverFaults (R3): the manager runs in this process with a
// fault-injecting round tripper on its rest.Config: 10 % of its reads and
// writes fail — 409, 500, 503, timeouts, and lost ACKs (the write lands,
// the answer is a broken connection or a 504). Every run ends; no effect
// happens twice; no IO follows a commit the manager was not told succeeded
// (the injector journals what each status write recorded and what the
// manager heard); the history check holds.
func testApiserverFaults(t *testing.T) {
	cl := sharedCluster(t)
	sz := sizes()
	s := newScenario(t, cl, "r3", func(run types.NamespacedName, step int32) Turn {
		if step == 0 {
			return Turn{Calls: []ToolCall{
				{ID: "charge", Name: toolCharge, Args: map[string]any{"amount": 1}},
				{ID: "refund", Name: toolRefund, Args: map[string]any{"amount": 2}},
				scaleCall(run.Name, "scale"),
			}}
		}
		return Turn{Text: "done"}
	})
	s.createAgent("faulty")

	faults := NewFaultInjector(uint64(seed()), faultRate)
	cfg := rest.CopyConfig(cl.admin)
	cfg.Wrap(faults.Wrap)
	copts := store.CacheOptions()
	copts.DefaultNamespaces = map[string]cache.Config{s.ns: {}}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Cache:                  copts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The signing key is read past the faults: it is setup, not the protocol.
	clean, _ := ctrl.NewManager(rest.CopyConfig(cl.admin), ctrl.Options{Scheme: testenv.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	seal, err := authz.LoadSigner(ctx, clean.GetAPIReader(), clean.GetClient(), signingSecret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controllers.Setup(ctx, mgr, controllers.Options{Holder: "r3-faulty", Signer: seal,
		MaxConcurrentReconciles: 4, NameSuffix: "-r3",
		// The suite's servers are on 127.0.0.1 (--egress-allow-cidrs=127.0.0.1/32).
		Egress: egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})}); err != nil {
		t.Fatal(err)
	}
	// Each class of fault is met at least twice whatever the seed: lost
	// ACKs of builtin mutations and of intent commits, and intent commits
	// that failed before reaching the apiserver.
	isScale := func(method, path string, _ *Commit) bool {
		return method == http.MethodPatch && strings.Contains(path, "/deployments/") && strings.HasSuffix(path, "/scale")
	}
	isIntent := func(_, _ string, c *Commit) bool { return c != nil && len(c.Started) > 0 }
	faults.Force(FaultLostACK, 2, isScale)
	faults.Force(FaultLostACK, 2, isIntent)
	faults.Force(Fault500, 2, isIntent)
	faults.Arm()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("the faulty manager stopped: %v", err)
		}
	}()
	defer wg.Wait()
	defer cancel()

	decide, stopDeciding := context.WithCancel(context.Background())
	defer stopDeciding()
	go s.decideLoop(decide)
	for i := range sz.faultRuns {
		if err := s.createRun(fmt.Sprintf("run-%03d", i), "faulty", "scale"); err != nil {
			t.Fatal(err)
		}
	}
	s.waitDone(3 * time.Minute)
	stopDeciding()

	injected := faults.Faults()
	s.faults = len(injected)
	landed := 0
	for _, f := range injected {
		if f.Landed {
			landed++
		}
	}
	t.Logf("seed %d: %d of %d apiserver requests failed (%d lost ACKs of writes that landed)", seed(), len(injected), faults.Requests(), landed)
	reqs := append(s.tools.Journal(), s.model.Journal()...)
	s.verify(CheckAcked(reqs, faults.Commits())...)
}
