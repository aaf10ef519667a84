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
	"fmt"
	"testing"
	"time"

	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
)

// BenchmarkMCPHangingNeighbour times one tenant's b.N ordinary runs
// (Scripted, no tool, created at once) on a manager with the default
// workers and listing bounds, alone and beside a tenant whose MCP server
// accepts connections and never answers (32 runs of 8 Agents, 8 server
// keys, the default 15 s listing timeout) — issue 19's observation was 100
// runs taking 29 s instead of 3 s. ns/op is the wall time per ordinary run;
// runs/s the throughput; the two sub-benchmarks' ratio is the point.
//
//	go test -run '^$' -bench BenchmarkMCPHangingNeighbour -benchtime 100x ./controllers/
func BenchmarkMCPHangingNeighbour(b *testing.B) {
	for _, hostile := range []bool{false, true} {
		name := "alone"
		if hostile {
			name = "hanging-neighbour"
		}
		b.Run(name, func(b *testing.B) {
			hs := []*harness{benchNamespace(b, "mcp-hostile"), benchNamespace(b, "mcp-ordinary")}
			m := startSharedManager(b, hs, controllers.Options{MaxConcurrentReconciles: controllers.DefaultMaxConcurrentReconciles})
			defer m.stop()
			if hostile {
				hang := mcptest.StartHang()
				defer hang.Close()
				hostileAgents(b, hs[0], hang.URL, 8, 4)
				if !eventually(func() bool { total, _ := hang.Requests(); return total > 0 }) {
					b.Fatal("the hanging server was never asked")
				}
			}
			b.ResetTimer()
			start := time.Now()
			ordinaryRuns(b, hs[1], b.N)
			waitAllSucceeded(b, hs[1], b.N, 10*time.Minute)
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
			if hostile {
				st := m.ctrls.Runs.Tools.MCP.Stats()
				b.Logf("%s: refresher %+v", fmt.Sprint(elapsed.Round(time.Millisecond)), st)
			}
		})
	}
}
