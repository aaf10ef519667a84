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

package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/executor"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/internal/served"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/retention"
)

func mustNamespaces(t *testing.T, value string) served.Namespaces {
	t.Helper()
	n, err := served.Parse(value)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestParseFlagsRefusesWatchNamespaces: a value that does not name
// namespaces stops the manager before it starts, naming the flag.
func TestParseFlagsRefusesWatchNamespaces(t *testing.T) {
	for _, value := range []string{"team-a,", "Team-A", "team-a/agents", "team-a,team-a"} {
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		if _, _, err := parseFlags(fs, []string{"--watch-namespaces=" + value}); err == nil || !strings.Contains(err.Error(), "--watch-namespaces") {
			t.Errorf("--watch-namespaces=%s: err = %v, want a refusal naming the flag", value, err)
		}
	}
}

func TestParseFlags(t *testing.T) {
	tests := map[string]struct {
		args []string
		want flags
	}{
		"defaults: webhook on loopback, metrics off": {
			want: flags{leaderElectionID: "exagent-manager.exagent.io", metricsAddr: "0", metricsSecure: true,
				probeAddr: ":8081", pprofAddr: "0", enableWebhooks: true, webhookHost: "127.0.0.1", webhookPort: 9443,
				opts: controllers.Options{MaxConcurrentReconciles: controllers.DefaultMaxConcurrentReconciles,
					MaxConcurrentDecisions: controllers.DefaultMaxConcurrentDecisions, MaxInFlight: executor.DefaultMaxInFlight,
					PerEndpoint: executor.DefaultPerEndpoint, ModelTimeout: 2 * time.Minute, ModelMaxRateLimitWait: controllers.DefaultMaxRateLimitWait, ReleaseOnStop: true,
					DrainTimeout: 20 * time.Second, LeaseSkewGrace: 2 * time.Second, HotStatusBytes: 32 << 10,
					SealValueBytes: 4 << 10, SegmentCacheBytes: 32 << 20, MaxTranscriptBytes: 64 << 20,
					MCPListConcurrency: mcplist.DefaultConcurrency, MCPListTimeout: mcplist.DefaultTimeout,
					RetentionWorkers: retention.DefaultWorkers, ArchiveTimeout: retention.DefaultArchiveTimeout,
					AgentRecheckInterval: controllers.DefaultAgentRecheckInterval, MaxWaitingRunsPerNamespace: controllers.DefaultMaxWaitingRunsPerNamespace},
				conversionPort: 443, migrateStorage: true},
		},
		"a pod's flags": {
			args: []string{"--leader-elect", "--webhook-host=0.0.0.0", "--webhook-cert-dir=/certs", "--metrics-bind-address=:8443",
				"--max-concurrent-reconciles=8", "--max-inflight-io=100", "--max-inflight-per-endpoint=4", "--holder-identity=pod-a",
				"--mcp-list-concurrency=4", "--mcp-list-timeout=5s", "--max-transcript-bytes=16777216",
				"--default-ttl-seconds-after-finished=86400", "--retention-workers=4", "--archive-timeout=5m", "--agent-recheck-interval=1m"},
			want: flags{leaderElect: true, leaderElectionID: "exagent-manager.exagent.io", metricsAddr: ":8443",
				metricsSecure: true, probeAddr: ":8081", pprofAddr: "0", enableWebhooks: true, webhookHost: "0.0.0.0", webhookPort: 9443,
				webhookCertDir: "/certs", defaultTTLSeconds: 86400,
				opts: controllers.Options{MaxConcurrentReconciles: 8,
					MaxConcurrentDecisions: controllers.DefaultMaxConcurrentDecisions, MaxInFlight: 100, PerEndpoint: 4,
					ModelTimeout: 2 * time.Minute, ModelMaxRateLimitWait: controllers.DefaultMaxRateLimitWait, Holder: "pod-a", ReleaseOnStop: true, DrainTimeout: 20 * time.Second,
					LeaseSkewGrace: 2 * time.Second, HotStatusBytes: 32 << 10, SealValueBytes: 4 << 10, SegmentCacheBytes: 32 << 20,
					MaxTranscriptBytes: 16 << 20, MCPListConcurrency: 4, MCPListTimeout: 5 * time.Second, RetentionWorkers: 4,
					ArchiveTimeout: 5 * time.Minute, AgentRecheckInterval: time.Minute, MaxWaitingRunsPerNamespace: controllers.DefaultMaxWaitingRunsPerNamespace},
				conversionPort: 443, migrateStorage: true},
		},
		"namespace-scoped": {
			args: []string{"--watch-namespaces=team-b, team-a"},
			want: flags{leaderElectionID: "exagent-manager.exagent.io", metricsAddr: "0", metricsSecure: true,
				probeAddr: ":8081", pprofAddr: "0", enableWebhooks: true, webhookHost: "127.0.0.1", webhookPort: 9443, watchNamespaces: "team-b, team-a",
				opts: controllers.Options{MaxConcurrentReconciles: controllers.DefaultMaxConcurrentReconciles,
					MaxConcurrentDecisions: controllers.DefaultMaxConcurrentDecisions, MaxInFlight: executor.DefaultMaxInFlight,
					PerEndpoint: executor.DefaultPerEndpoint, ModelTimeout: 2 * time.Minute, ModelMaxRateLimitWait: controllers.DefaultMaxRateLimitWait, ReleaseOnStop: true,
					DrainTimeout: 20 * time.Second, LeaseSkewGrace: 2 * time.Second, HotStatusBytes: 32 << 10,
					SealValueBytes: 4 << 10, SegmentCacheBytes: 32 << 20, MaxTranscriptBytes: 64 << 20,
					MCPListConcurrency: mcplist.DefaultConcurrency, MCPListTimeout: mcplist.DefaultTimeout,
					RetentionWorkers: retention.DefaultWorkers, ArchiveTimeout: retention.DefaultArchiveTimeout,
					AgentRecheckInterval: controllers.DefaultAgentRecheckInterval, Namespaces: mustNamespaces(t, "team-a,team-b"),
					MaxWaitingRunsPerNamespace: controllers.DefaultMaxWaitingRunsPerNamespace},
				conversionPort: 443, migrateStorage: true},
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
			if diff := cmp.Diff(tc.want, *got, cmp.AllowUnexported(flags{}, served.Namespaces{}, shard.Serving{}, shard.Set{})); diff != "" {
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
		{"--max-transcript-bytes=65536"},     // below 1 MiB
		{"--max-transcript-bytes=134217728"}, // over 64 MiB: more than any Agent may ask
		{"--max-transcript-bytes=0"},         // no "off": 64 MiB, the CRD's maximum, is the widest cap
		{"--default-ttl-seconds-after-finished=-1"},
		{"--default-ttl-seconds-after-finished=4294967296"}, // past what ttlSecondsAfterFinished (int32) can say
		{"--retention-workers=0"},
		{"--archive-timeout=0s"},
		{"--agent-recheck-interval=0"}, // an Agent checked in a loop would read its Secrets in a loop
	} {
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		if _, _, err := parseFlags(fs, args); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

func TestParseFlagsEgress(t *testing.T) {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f, _, err := parseFlags(fs, []string{"--egress-allow-cidrs=127.0.0.1/32, 10.20.0.0/16", "--egress-deny-cidrs=10.20.30.0/24",
		"--cluster-pod-cidrs=10.244.0.0/16", "--cluster-service-cidrs=10.96.0.0/12", "--egress-namespace-config=exagent-system/egress",
		"--metrics-bind-address=:8443", "--health-probe-bind-address=:8081", "--webhook-port=9443"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.egressConfig()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"allow": egress.String(c.Allow), "deny": egress.String(c.Deny),
		"pods": egress.String(c.ClusterPods), "services": egress.String(c.ClusterServices)}
	want := map[string]string{"allow": "127.0.0.1/32,10.20.0.0/16", "deny": "10.20.30.0/24", "pods": "10.244.0.0/16", "services": "10.96.0.0/12"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("egress config (-want +got):\n%s", diff)
	}
	if key, err := f.egressNamespaceKey(); err != nil || key == nil || key.String() != "exagent-system/egress" {
		t.Errorf("namespace config = %v, %v", key, err)
	}
	wantPorts := []egress.Port{{Name: "webhook", Port: 9443}, {Name: "metrics", Port: 8443}, {Name: "health probe", Port: 8081}}
	if diff := cmp.Diff(wantPorts, f.ownPorts()); diff != "" {
		t.Errorf("own ports (-want +got):\n%s", diff)
	}
	off := &flags{metricsAddr: "0", probeAddr: "0"}
	if p := off.ownPorts(); len(p) != 0 {
		t.Errorf("endpoints turned off: own ports %v, want none", p)
	}
}

func TestParseFlagsRefusesBadEgress(t *testing.T) {
	for _, tc := range []struct {
		arg, want string
	}{
		{"--egress-allow-cidrs=10.0.0.0/33", `--egress-allow-cidrs: "10.0.0.0/33" is not a CIDR`},
		{"--egress-deny-cidrs=10.0.0.0/8,nope", `--egress-deny-cidrs: "nope" is not a CIDR or an IP address`},
		{"--cluster-pod-cidrs=10.244.0.0/16/1", `--cluster-pod-cidrs: "10.244.0.0/16/1"`},
		{"--cluster-service-cidrs=fe80::1%eth0", "--cluster-service-cidrs"},
		{"--egress-namespace-config=egress", "want NAMESPACE/NAME"},
		{"--egress-namespace-config=a/b/c", "want NAMESPACE/NAME"},
	} {
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		_, _, err := parseFlags(fs, []string{tc.arg})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.arg, err, tc.want)
		}
	}
}

func TestParseFlagsUIURLTemplate(t *testing.T) {
	tests := map[string]struct {
		value, want, wantErr string
	}{
		"unset: no link":  {},
		"the page's runs": {value: "http://127.0.0.1:8000/runs/{namespace}/{name}", want: "http://127.0.0.1:8000/runs/{namespace}/{name}"},
		"behind a proxy":  {value: "https://approvals.example.com/runs/{namespace}/{name}", want: "https://approvals.example.com/runs/{namespace}/{name}"},
		"no run in it":    {value: "http://127.0.0.1:8000/", wantErr: "must contain {name}"},
		"not a web page":  {value: "javascript:alert({name})", wantErr: "absolute http or https URL"},
		"relative":        {value: "/runs/{namespace}/{name}", wantErr: "absolute http or https URL"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			got, _, err := parseFlags(fs, []string{"--ui-url-template=" + tc.value})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseFlags = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got.opts.UIURLTemplate) != tc.want {
				t.Errorf("UIURLTemplate = %q, want %q", got.opts.UIURLTemplate, tc.want)
			}
		})
	}
}
