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

package controllers_test

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// startDecisionsOnly runs the ApprovalDecision controller alone in h's
// namespace — no run controller, so a run stays in whatever phase the test
// put it (a Queued run nobody claims: every worker busy) — until the test
// ends. clk and verifier may be nil (the real clock and SAR verifier).
func (h *harness) startDecisionsOnly(clk clock.PassiveClock, verifier controllers.DecisionVerifier) {
	h.t.Helper()
	cfg := rest.CopyConfig(env().Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env().Scheme,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{h.ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		h.t.Fatalf("new manager: %v", err)
	}
	r := &controllers.ApprovalDecisionReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Store:     store.NewStore(mgr.GetClient(), mgr.GetAPIReader()),
		Verifier:  verifier,
		Clock:     clk,
		Name:      "decisions-only-" + h.ns,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		h.t.Fatalf("setup: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	h.t.Cleanup(func() {
		cancel()
		<-done
	})
}

// setStatus writes a status the engine produced, as the admin standing in
// for the run controller (CAS on the resourceVersion read).
func (h *harness) setStatus(run *exagentv1.AgentRun, s loop.Status) *exagentv1.AgentRun {
	h.t.Helper()
	out := run.DeepCopy()
	s.DeepCopyInto(&out.Status)
	out.Status.Conditions = loop.Conditions(s, run.Generation, time.Now())
	if err := h.c.Status().Update(context.Background(), out); err != nil {
		h.t.Fatalf("writing the status of run %s: %v", run.Name, err)
	}
	return out
}

// hasCondition reports whether run carries condition t with reason.
func hasCondition(run *exagentv1.AgentRun, t, reason string) bool {
	c := meta.FindStatusCondition(run.Status.Conditions, t)
	return c != nil && c.Reason == reason
}
