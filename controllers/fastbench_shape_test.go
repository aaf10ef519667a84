package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
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
	ctx := context.Background()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	must(b, err)
	raw, _ := json.Marshal(status)
	objs := make([]*exagentv1.AgentRun, casWriters)
	for i := range objs {
		o := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: h.ns}, Spec: spec}
		must(b, c.Create(ctx, o))
		o.Status = *status.DeepCopy()
		objs[i] = o
	}
	const each = 30
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range objs {
		wg.Go(func() {
			for j := range each {
				objs[i].Status.Reason = fmt.Sprintf("W%d", j) // every write changes the object
				must(b, c.Status().Update(ctx, objs[i]))
			}
		})
	}
	wg.Wait()
	ceiling := casWriters * each / time.Since(t0).Seconds()
	lat := make([]time.Duration, 0, 100)
	for j := range 100 {
		objs[0].Status.Reason = fmt.Sprintf("S%d", j)
		t1 := time.Now()
		must(b, c.Status().Update(ctx, objs[0]))
		lat = append(lat, time.Since(t1))
	}
	p50, _ := percentiles(lat)
	for _, o := range objs {
		_ = c.Delete(ctx, o)
	}
	return ceiling, p50, len(raw)
}
