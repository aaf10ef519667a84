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

package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/model"
	"github.com/exagent-io/exagent/store"
)

// exagent's own metrics, on controller-runtime's registry (served by the
// manager's metrics endpoint with its workqueue and client metrics).
// Counters are per process: sum them over the replicas. The run gauges
// (runsCollector) are read from each replica's cache, so every replica
// reports the same values: take the max over the replicas.
var (
	toolCallsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exagent_tool_calls_total",
		Help: fmt.Sprintf("Tool calls this process executed, by tool and outcome (Succeeded, Failed, Unknown: an unknown outcome makes the call Uncertain unless the tool is idempotent). "+
			"Past %d distinct tool names, further names count as tool=%q.", MaxToolLabels, OtherToolLabel),
	}, []string{"tool", "outcome"})
	modelRequestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exagent_model_requests_total",
		Help: "Model requests this process sent, by provider and outcome (Succeeded, Failed, ScriptExhausted).",
	}, []string{"provider", "outcome"})
	modelTokensTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exagent_model_tokens_total",
		Help: "Model tokens the responses reported, by provider and kind (prompt, completion).",
	}, []string{"provider", "kind"})
	statusWritesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exagent_status_writes_total",
		Help: "Compare-and-swap writes of AgentRun status, by result (Written, Conflict: the run changed since it was read, Error).",
	}, []string{"result"})
	reconcileConflictsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exagent_reconcile_conflicts_total",
		Help: "Reconciles whose write lost its compare-and-swap (the object changed since it was read), retried quietly, by controller.",
	}, []string{"controller"})
	statusBytes = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "exagent_status_bytes",
		Help:    "Size of the AgentRun status written, in bytes of JSON (a write costs more the bigger the object).",
		Buckets: prometheus.ExponentialBuckets(1024, 2, 11), // 1 KiB … 1 MiB
	})
	approvalWaitSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "exagent_approval_wait_seconds",
		Help: "Time from an approval's request to its decision, by decision (Approved, Denied, Cancelled, Expired).",
		// 10s … ~7 days
		Buckets: []float64{10, 30, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600},
	}, []string{"decision"})
	runsEndedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exagent_runs_ended_total",
		Help: "Runs this process ended, by phase and reason.",
	}, []string{"phase", "reason"})
	segmentBytesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exagent_segment_bytes_total",
		Help: "Bytes of AgentRunSegment content, by namespace and event: Created (segments this process created), " +
			"Deleted (the segments of runs this process saw deleted, which go with their run). " +
			"exagent_segment_bytes is what the namespace's runs hold now.",
	}, []string{"namespace", "event"})
)

// Events of exagent_segment_bytes_total.
const (
	segmentCreated = "Created"
	segmentDeleted = "Deleted"
)

func init() {
	metrics.Registry.MustRegister(toolCallsTotal, modelRequestsTotal, modelTokensTotal, statusWritesTotal,
		reconcileConflictsTotal, statusBytes, approvalWaitSeconds, runsEndedTotal, segmentBytesTotal, triggerEventsTotal)
}

// observeSegmentCreated counts a segment this process created.
func observeSegmentCreated(namespace string, bytes int) {
	segmentBytesTotal.WithLabelValues(namespace, segmentCreated).Add(float64(bytes))
}

// observeRunDeleted counts the segments of a deleted run as deleted: the
// run's status.transcript.segmentBytes, what its chain holds (the
// garbage collector removes them with the run).
func observeRunDeleted(run *exagentv1.AgentRun) {
	if t := run.Status.Transcript; t != nil && t.SegmentBytes > 0 {
		segmentBytesTotal.WithLabelValues(run.Namespace, segmentDeleted).Add(float64(t.SegmentBytes))
	}
}

// observeToolCall counts one executed tool call.
func observeToolCall(tool string, kind loop.ResultKind) {
	toolCallsTotal.WithLabelValues(toolLabels.value(tool), string(kind)).Inc()
}

// MaxToolLabels bounds the distinct values of exagent_tool_calls_total's
// tool label in one process. Tool names are written by every Agent author,
// and each name would be a series Prometheus keeps: the first
// MaxToolLabels names this process counts keep their own series, later
// ones are counted under OtherToolLabel (docs/observability.md, Metrics).
const MaxToolLabels = 200

// OtherToolLabel is the tool label of calls past MaxToolLabels names. The
// parentheses keep it apart from every tool name (letters, digits, '_', '-').
const OtherToolLabel = "(other)"

var toolLabels = boundedLabels{max: MaxToolLabels, other: OtherToolLabel}

// boundedLabels hands out at most max distinct label values, first come,
// and other for the rest.
type boundedLabels struct {
	max   int
	other string

	mu   sync.Mutex
	seen map[string]struct{}
}

func (b *boundedLabels) value(v string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[v]; ok {
		return v
	}
	if len(b.seen) >= b.max {
		return b.other
	}
	if b.seen == nil {
		b.seen = map[string]struct{}{}
	}
	b.seen[v] = struct{}{}
	return v
}

// observeModelRequest counts one model request and the tokens it used.
func observeModelRequest(provider exagentv1.ModelProvider, resp *loop.ModelResponse, err error) {
	p := string(provider)
	switch {
	case errors.Is(err, model.ErrScriptExhausted):
		modelRequestsTotal.WithLabelValues(p, exagentv1.ReasonScriptExhausted).Inc()
	case err != nil || resp == nil:
		modelRequestsTotal.WithLabelValues(p, "Failed").Inc()
	default:
		modelRequestsTotal.WithLabelValues(p, "Succeeded").Inc()
		modelTokensTotal.WithLabelValues(p, "prompt").Add(float64(resp.PromptTokens))
		modelTokensTotal.WithLabelValues(p, "completion").Add(float64(resp.CompletionTokens))
	}
}

// storeMetrics is what the write path reports to the metrics.
var storeMetrics = store.Observer{Committed: observeCommit, WriteFailed: observeWriteError, SegmentCreated: observeSegmentCreated}

// observeCommit records what a status write that landed changed: its
// size, the approvals it decided (their wait) and the run's end.
func observeCommit(old, written *exagentv1.AgentRun, now time.Time) {
	statusWritesTotal.WithLabelValues("Written").Inc()
	if b, err := json.Marshal(&written.Status); err == nil {
		statusBytes.Observe(float64(len(b)))
	}
	for i := range written.Status.Approvals {
		a := &written.Status.Approvals[i]
		if a.State == exagentv1.ApprovalPending {
			continue
		}
		if was := old.Status.Approval(a.ID); was != nil && was.State == exagentv1.ApprovalPending {
			approvalWaitSeconds.WithLabelValues(string(a.State)).Observe(max(now.Sub(a.RequestedAt.Time), 0).Seconds())
		}
	}
	observeWaitsClosed(old, written) // metrics_waits.go
	if p := written.Status.Phase; p.IsTerminal() && !old.Status.Phase.IsTerminal() {
		runsEndedTotal.WithLabelValues(string(p), written.Status.Reason).Inc()
	}
}

// observeWriteError counts a status write that did not land.
func observeWriteError(err error) {
	if apierrors.IsConflict(err) {
		statusWritesTotal.WithLabelValues("Conflict").Inc()
		return
	}
	statusWritesTotal.WithLabelValues("Error").Inc()
}

// runsCollector reports the gauges of the runs in the manager's cache at
// each scrape: runs by namespace and phase, pending approvals, uncertain
// calls, segment bytes and runs held by a failing archive sink by
// namespace. Computed from the cache, never kept: a
// restarted process reports the truth at once.
type runsCollector struct {
	reader client.Reader
}

var (
	runsDesc = prometheus.NewDesc("exagent_runs",
		"AgentRuns by namespace and phase (NotStarted before the controller saw them).", []string{"namespace", "phase"}, nil)
	pendingApprovalsDesc = prometheus.NewDesc("exagent_pending_approvals",
		"Approvals waiting for a human decision, by namespace.", []string{"namespace"}, nil)
	uncertainCallsDesc = prometheus.NewDesc("exagent_uncertain_calls",
		"Tool calls with no confirmed outcome, waiting for kubectl approve resolve, by namespace.", []string{"namespace"}, nil)
	oldestPendingDesc = prometheus.NewDesc("exagent_oldest_pending_approval_timestamp_seconds",
		"When the oldest pending approval of the namespace was requested (Unix time).", []string{"namespace"}, nil)
	segmentBytesDesc = prometheus.NewDesc("exagent_segment_bytes",
		"Bytes of AgentRunSegment content the namespace's runs hold now (the sum of their status.transcript.segmentBytes); "+
			"each segment is at most 262144 bytes, so a ResourceQuota on count/agentrunsegments.exagent.io bounds it.", []string{"namespace"}, nil)
	heldRunsDesc = prometheus.NewDesc("exagent_retention_held_runs",
		"Ended runs retention keeps because their Agent's archive sink has not answered 2xx (status.archive Pending), by namespace: "+
			"they are never deleted unarchived.", []string{"namespace"}, nil)
)

// Describe implements prometheus.Collector.
func (c runsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- runsDesc
	ch <- pendingApprovalsDesc
	ch <- uncertainCallsDesc
	ch <- oldestPendingDesc
	ch <- segmentBytesDesc
	ch <- heldRunsDesc
	ch <- waitingCallsDesc
}

// Collect implements prometheus.Collector.
func (c runsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var runs exagentv1.AgentRunList
	// The cache's own objects, read only: no copy of every run per scrape.
	if err := c.reader.List(ctx, &runs, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(runsDesc, err)
		return
	}
	type key struct{ ns, phase string }
	byPhase := map[key]int{}
	pending, uncertain := map[string]int{}, map[string]int{}
	oldest := map[string]time.Time{}
	segBytes, held := map[string]int64{}, map[string]int{}
	waits := map[[2]string]int{}
	for i := range runs.Items {
		r := &runs.Items[i]
		waitingCalls(r, waits) // metrics_waits.go
		segBytes[r.Namespace] += segmentBytesOf(r)
		if a := r.Status.Archive; a != nil && a.State == exagentv1.ArchivePending {
			held[r.Namespace]++
		} else if _, ok := held[r.Namespace]; !ok {
			held[r.Namespace] = 0
		}
		phase := string(r.Status.Phase)
		if phase == "" {
			phase = exagentv1.ReasonNotStarted
		}
		byPhase[key{r.Namespace, phase}]++
		for j := range r.Status.Approvals {
			if a := &r.Status.Approvals[j]; a.State == exagentv1.ApprovalPending {
				pending[r.Namespace]++
				if o, ok := oldest[r.Namespace]; !ok || a.RequestedAt.Time.Before(o) {
					oldest[r.Namespace] = a.RequestedAt.Time
				}
			}
		}
		for j := range r.Status.Calls {
			if r.Status.Calls[j].State == exagentv1.CallUncertain {
				uncertain[r.Namespace]++
			}
		}
		if _, ok := pending[r.Namespace]; !ok {
			pending[r.Namespace] = 0
		}
		if _, ok := uncertain[r.Namespace]; !ok {
			uncertain[r.Namespace] = 0
		}
	}
	for k, n := range byPhase {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(n), k.ns, k.phase)
	}
	for ns, n := range pending {
		ch <- prometheus.MustNewConstMetric(pendingApprovalsDesc, prometheus.GaugeValue, float64(n), ns)
	}
	for ns, n := range uncertain {
		ch <- prometheus.MustNewConstMetric(uncertainCallsDesc, prometheus.GaugeValue, float64(n), ns)
	}
	for ns, at := range oldest {
		ch <- prometheus.MustNewConstMetric(oldestPendingDesc, prometheus.GaugeValue, float64(at.Unix()), ns)
	}
	for ns, n := range segBytes {
		ch <- prometheus.MustNewConstMetric(segmentBytesDesc, prometheus.GaugeValue, float64(n), ns)
	}
	for ns, n := range held {
		ch <- prometheus.MustNewConstMetric(heldRunsDesc, prometheus.GaugeValue, float64(n), ns)
	}
	for k, n := range waits {
		ch <- prometheus.MustNewConstMetric(waitingCallsDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}

// segmentBytesOf is what run's segments hold (the cache keeps the
// transcript head of every run, ended and waiting ones too).
func segmentBytesOf(r *exagentv1.AgentRun) int64 {
	if t := r.Status.Transcript; t != nil {
		return t.SegmentBytes
	}
	return 0
}

// registerRunsCollector adds the run gauges of reader's runs to the
// registry, once per process (a second manager in one process, as in
// tests, keeps the first one's).
func registerRunsCollector(reader client.Reader) error {
	err := metrics.Registry.Register(runsCollector{reader: reader})
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		return nil
	}
	return err
}
