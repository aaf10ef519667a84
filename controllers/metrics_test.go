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
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/exagent-io/exagent/loop"
)

// TestMetricToolLabelsBounded: tool names are Agent authors' strings, so
// exagent_tool_calls_total may not grow a series per name without bound.
// Past MaxToolLabels distinct names, calls are counted under
// OtherToolLabel; a name already seen keeps its own series.
func TestMetricToolLabelsBounded(t *testing.T) {
	first := "bounded-probe-first"
	observeToolCall(first, loop.ResultSucceeded)
	for i := range 2 * MaxToolLabels {
		observeToolCall(fmt.Sprintf("bounded-probe-%d", i), loop.ResultSucceeded)
	}
	observeToolCall(first, loop.ResultFailed)

	tools := map[string]float64{}
	ch := make(chan prometheus.Metric, 64)
	go func() { toolCallsTotal.Collect(ch); close(ch) }()
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		for _, l := range pb.GetLabel() {
			if l.GetName() == "tool" {
				tools[l.GetValue()] += pb.GetCounter().GetValue()
			}
		}
	}
	// Other tests of the process may have taken slots too: the bound is
	// on every name, theirs included.
	if len(tools) > MaxToolLabels+1 {
		t.Errorf("exagent_tool_calls_total has %d distinct tool labels, want at most %d and %q", len(tools), MaxToolLabels, OtherToolLabel)
	}
	if tools[OtherToolLabel] < MaxToolLabels {
		t.Errorf("calls counted as %q = %v, want at least %d (the names past the bound)", OtherToolLabel, tools[OtherToolLabel], MaxToolLabels)
	}
	if tools[first] != 2 {
		t.Errorf("calls of %q = %v, want 2: a name seen before the bound keeps its series", first, tools[first])
	}
}
