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

package model

import (
	"context"
	"net/http"
	"testing"

	"github.com/exagent-io/exagent/internal/egress"

	"github.com/exagent-io/exagent/internal/testing/anthropictest"
	"github.com/exagent-io/exagent/loop"
)

// BenchmarkAnthropicPromptCache: a 200-turn run whose every turn adds a
// 40 KiB tool result, sent to our Messages server, which bills each
// request by Anthropic's published caching rules (a write 1.25×, a read
// 0.1× of base input). Reported: billed input tokens per turn with the
// provider's cache breakpoints and without them, and their ratio.
//
//	go test ./model -run '^$' -bench BenchmarkAnthropicPromptCache -benchtime 1x
func BenchmarkAnthropicPromptCache(b *testing.B) {
	const turns, result = 200, 40 << 10
	run := func(noCache bool) float64 {
		srv := anthropictest.Start(readLogsReply)
		defer srv.Close()
		p, err := NewAnthropic(AnthropicConfig{BaseURL: srv.URL, Model: "claude-test", APIKey: "k", NoCache: noCache,
			HTTPClient: loopbackClientB(b)})
		if err != nil {
			b.Fatal(err)
		}
		full := longRun(turns, result)
		for turn := range turns {
			msgs := full[:2+2*turn]
			if _, err := p.Complete(context.Background(), loop.ModelRequest{Messages: msgs, Tools: readLogs}); err != nil {
				b.Fatal(err)
			}
		}
		var billed float64
		for _, r := range srv.Requests() {
			billed += r.Usage.Billed()
		}
		return billed / turns
	}
	var cached, uncached float64
	for b.Loop() {
		cached = run(false)
		uncached = run(true)
	}
	b.ReportMetric(cached, "billed-tokens/turn-cached")
	b.ReportMetric(uncached, "billed-tokens/turn-uncached")
	b.ReportMetric(uncached/cached, "ratio")
}

// loopbackClientB is loopbackOnly for a benchmark.
func loopbackClientB(tb testing.TB) *http.Client {
	allow, err := egress.ParseCIDRs("127.0.0.1/32")
	if err != nil {
		tb.Fatal(err)
	}
	return egress.NewClient(egress.TransportOptions{Policy: egress.New(egress.Config{Allow: allow})})
}
