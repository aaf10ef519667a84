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
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// BenchmarkFastStatusShape is what one status write costs the apiserver
// by the shape of the status, not only its size: a run paused at an
// approval as the manager wrote it, the same without its conditions, and
// a status of the same bytes in one field — each as the concurrent
// ceiling (casWriters writers) and the sequential p50, and as ratios to
// the 2 KiB unit of the other benchmarks. The apiserver's cost is mostly
// per field (decoding, pruning, validating, re-encoding, managedFields),
// which is why the run's status and its conditions are atomic for
// server-side apply (api/v1alpha1) and why the hot status is kept lean.
func BenchmarkFastStatusShape(b *testing.B) {
	h := benchNamespace(b, "fast-shape")
	u := measureCAS(b, h.ns)
	bt := newBenchTools(b, nil)
	approvalAgent(h, bt.srv.URL)
	mgr := h.startBenchManager(benchOptions(), nil)
	createRuns(b, h, "r", 1, nil)
	waitRuns(b, h, mgr, 1, 50*time.Millisecond, time.Minute, "paused", paused)
	mgr.stop()
	run := &exagentv1.AgentRun{}
	must(b, h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "r-00000"}, run))
	pausedBytes, _ := json.Marshal(run.Status)
	shapes := []struct {
		name   string
		status func() exagentv1.AgentRunStatus
	}{
		{"paused", func() exagentv1.AgentRunStatus { return *run.Status.DeepCopy() }},
		{"paused-no-conditions", func() exagentv1.AgentRunStatus {
			s := run.Status.DeepCopy()
			s.Conditions = nil
			return *s
		}},
		{"same-bytes-one-field", func() exagentv1.AgentRunStatus {
			return exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, Message: strings.Repeat("x", min(len(pausedBytes), 4000))}
		}},
	}
	b.ResetTimer()
	for _, sh := range shapes {
		ceiling, rt, size := shapeCost(b, h, run.Spec, sh.name, sh.status())
		b.ReportMetric(ceiling/u.ceiling, sh.name+"-ceiling/unit")
		b.ReportMetric(u.ratio(rt), sh.name+"-rt/unit")
		b.Logf("%-22s status %5d B: ceiling %4.0f w/s (%.2f of the unit's %.0f), p50 %6.2f ms (%.2f rt)",
			sh.name, size, ceiling, ceiling/u.ceiling, u.ceiling, float64(rt.Microseconds())/1000, u.ratio(rt))
	}
	b.StopTimer()
	u.report(b)
	b.ReportMetric(0, "ns/op")
}

// shapeCost writes status on casWriters objects at once, then on one
// sequentially: the ceiling, the p50 and the status's JSON size.
func shapeCost(b *testing.B, h *harness, spec exagentv1.AgentRunSpec, name string, status exagentv1.AgentRunStatus) (float64, time.Duration, int) {
	c := benchClient(b)
	raw, _ := json.Marshal(status)
	reason := func(prefix string) func(*exagentv1.AgentRunStatus, int) {
		return func(s *exagentv1.AgentRunStatus, j int) { s.Reason = fmt.Sprintf("%s%d", prefix, j) } // every write changes the object
	}
	ceiling := writeCeiling(b, c, h.ns, name, spec, status, 30, reason("W"))
	obj := createWithStatus(b, c, h.ns, name+"-rt", spec, status)
	p50 := writeP50(b, c, obj, 100, reason("S"))
	_ = c.Delete(context.Background(), obj)
	return ceiling, p50, len(raw)
}
