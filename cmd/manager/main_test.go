package main

import (
	"flag"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/executor"
	"github.com/exagent-io/exagent/internal/mcplist"
)

func TestParseFlags(t *testing.T) {
	tests := map[string]struct {
		args []string
		want flags
	}{
		"defaults: webhook on loopback, metrics off": {
			want: flags{leaderElectionID: "exagent-manager.exagent.io", metricsAddr: "0", metricsSecure: true, probeAddr: ":8081",
				enableWebhooks: true, webhookHost: "127.0.0.1", webhookPort: 9443, maxConcurrentReconciles: controllers.DefaultMaxConcurrentReconciles, maxConcurrentDecisions: controllers.DefaultMaxConcurrentDecisions,
				maxInFlight: executor.DefaultMaxInFlight, perEndpoint: executor.DefaultPerEndpoint, modelTimeout: 2 * time.Minute, releaseOnStop: true, drainTimeout: 20 * time.Second, leaseSkewGrace: 2 * time.Second,
				hotStatusBytes: 32 << 10, sealValueBytes: 4 << 10, segmentCacheBytes: 32 << 20,
				mcpListConcurrency: mcplist.DefaultConcurrency, mcpListTimeout: mcplist.DefaultTimeout},
		},
		"a pod's flags": {
			args: []string{"--leader-elect", "--webhook-host=0.0.0.0", "--webhook-cert-dir=/certs", "--metrics-bind-address=:8443",
				"--max-concurrent-reconciles=8", "--max-inflight-io=100", "--max-inflight-per-endpoint=4", "--holder-identity=pod-a",
				"--mcp-list-concurrency=4", "--mcp-list-timeout=5s"},
			want: flags{leaderElect: true, leaderElectionID: "exagent-manager.exagent.io", metricsAddr: ":8443", metricsSecure: true,
				probeAddr: ":8081", enableWebhooks: true, webhookHost: "0.0.0.0", webhookPort: 9443, webhookCertDir: "/certs",
				maxConcurrentReconciles: 8, maxConcurrentDecisions: controllers.DefaultMaxConcurrentDecisions, maxInFlight: 100, perEndpoint: 4, modelTimeout: 2 * time.Minute, holder: "pod-a", releaseOnStop: true, drainTimeout: 20 * time.Second, leaseSkewGrace: 2 * time.Second,
				hotStatusBytes: 32 << 10, sealValueBytes: 4 << 10, segmentCacheBytes: 32 << 20,
				mcpListConcurrency: 4, mcpListTimeout: 5 * time.Second},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			fs.String("kubeconfig", "", "")
			got, _, err := parseFlags(fs, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *got, cmp.AllowUnexported(flags{})); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFlagsRefusesSealingBudgets(t *testing.T) {
	for _, args := range [][]string{
		{"--hot-status-bytes=4096"},
		{"--seal-value-bytes=100"},
		{"--hot-status-bytes=16384", "--seal-value-bytes=8192"},
		{"--segment-cache-bytes=1000"},
	} {
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		if _, _, err := parseFlags(fs, args); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
