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
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Metrics of waits on the world (docs/waits.md): how long calls waited,
// observed by the process whose commit closed the wait, and (in
// runsCollector) how many calls wait now.
var (
	waitSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "exagent_wait_seconds",
		Help: "Time a waiting call (Sleep, WaitFor, WaitForCallback) waited, from the start of its wait to its end, " +
			"by kind (Timer, Object, Callback) and outcome (Succeeded: slept, condition met or callback received; " +
			"Failed: timed out, refused, or the run ended).",
		// 1s … ~7 days
		Buckets: []float64{1, 10, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600},
	}, []string{"kind", "outcome"})
	waitingCallsDesc = prometheus.NewDesc("exagent_waiting_calls",
		"Calls waiting on the world now (their runs Waiting, or about to be), by namespace and kind (Timer, Object, Callback).",
		[]string{"namespace", "kind"}, nil)
)

func init() {
	metrics.Registry.MustRegister(waitSeconds)
}

// observeWaitsClosed records the waits a commit closed: each call that
// waited in old and is closed in written.
func observeWaitsClosed(old, written *exagentv1.AgentRun) {
	for i := range written.Status.Calls {
		c := &written.Status.Calls[i]
		if c.Wait == nil || c.State == exagentv1.CallStarted || c.Outcome == nil || c.Outcome.At == nil {
			continue
		}
		if was := old.Status.Call(c.ID); was == nil || was.State != exagentv1.CallStarted {
			continue
		}
		waited := max(c.Outcome.At.Sub(c.Wait.Since.Time), 0)
		waitSeconds.WithLabelValues(string(c.Wait.Kind), string(c.State)).Observe(waited.Seconds())
	}
}

// waitingCalls counts run's waiting calls by kind into n.
func waitingCalls(r *exagentv1.AgentRun, n map[[2]string]int) {
	for i := range r.Status.Calls {
		if c := &r.Status.Calls[i]; c.State == exagentv1.CallStarted && c.Wait != nil {
			n[[2]string{r.Namespace, string(c.Wait.Kind)}]++
		}
	}
}
