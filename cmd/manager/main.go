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
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	exagentv1alpha1 "github.com/exagent-io/exagent/api/v1alpha1"
	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/executor"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/internal/notify"
	"github.com/exagent-io/exagent/internal/served"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/internal/telemetry"
	"github.com/exagent-io/exagent/internal/version"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/retention"
	"github.com/exagent-io/exagent/store"
	exagentwebhook "github.com/exagent-io/exagent/webhook"
)

// Leader election (--leader-elect) keeps its Lease in the manager's namespace,
// and records there (a core Event on the Lease) which replica leads.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=system,resources=events,verbs=create;patch

// The metrics endpoint authenticates and authorizes each scrape with the apiserver.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// flags are the manager's command line.
type flags struct {
	// opts are the controllers' settings, bound to their flags directly
	// (the rest of controllers.Options is wired in run).
	opts                    controllers.Options
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	metricsAddr             string
	metricsSecure           bool
	probeAddr               string
	pprofAddr               string
	enableWebhooks          bool
	webhookHost             string
	webhookPort             int
	webhookCertDir          string
	triggerAddr             string
	triggerCertDir          string
	webhookClientCA         string
	signingSecret           string
	egressAllowCIDRs        string
	egressDenyCIDRs         string
	clusterPodCIDRs         string
	clusterServiceCIDRs     string
	egressNamespaceConfig   string
	watchNamespaces         string
	defaultTTLSeconds       int
	uiURLTemplate           string
	printVersion            bool
	conversionService       string
	conversionPort          int
	conversionCAFile        string
	migrateStorage          bool
	shard                   string
	shardGiven              bool
	shards                  string
	shardSet                shard.Set
}

func parseFlags(fs *flag.FlagSet, args []string) (*flags, zap.Options, error) {
	f := &flags{}
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "Enable leader election (correctness never depends on it: every commit is fenced by the run's claim).")
	fs.StringVar(&f.leaderElectionID, "leader-election-id", defaultLeaderElectionID, "Name of the leader election Lease (with --shard: exagent-manager-SHARD.exagent.io).")
	fs.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease (in-cluster default: the pod's).")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint (e.g. :8443); 0 disables it.")
	fs.BoolVar(&f.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS (self-signed unless certificates are mounted), each scrape authenticated and authorized by the apiserver.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address of the health probes; 0 disables them.")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "0", "Address of Go's /debug/pprof endpoints (CPU and heap profiles; unauthenticated: bind it to 127.0.0.1 and reach it with kubectl port-forward); 0 disables them.")
	fs.BoolVar(&f.enableWebhooks, "enable-webhooks", true, "Serve the admission webhooks.")
	fs.StringVar(&f.webhookHost, "webhook-host", "127.0.0.1", "Address the webhook server listens on (0.0.0.0 in a pod).")
	fs.IntVar(&f.webhookPort, "webhook-port", 9443, "Port of the webhook server.")
	fs.StringVar(&f.webhookCertDir, "webhook-cert-dir", "", "Folder with tls.crt and tls.key of the webhook server.")
	fs.StringVar(&f.triggerAddr, "trigger-bind-address", "", "Address the trigger listener (POST /triggers/NAMESPACE/NAME: AgentTrigger webhooks and Alertmanager) serves on over TLS, e.g. :9444; off when empty.")
	fs.StringVar(&f.opts.CallbackBaseURL, "callback-base-url", "", "URL at which third parties reach the trigger listener (e.g. https://exagent-triggers.example.com:9444): NewCallback makes its URLs under it (POST /callbacks/NAMESPACE/RUN-UID/ID); off when empty. Needs --trigger-bind-address and the signing key (--decision-signing-secret).")
	fs.StringVar(&f.triggerCertDir, "trigger-cert-dir", "", "Folder with tls.crt and tls.key of the trigger listener (default: --webhook-cert-dir).")
	fs.StringVar(&f.webhookClientCA, "webhook-client-ca", "", "PEM bundle of the CA of the kube-apiserver's webhook client certificate: the webhook server then refuses, "+
		"at the TLS handshake, every caller without a certificate it signed (docs/install.md, \"The apiserver's client certificate\"); default: any caller is answered.")
	fs.IntVar(&f.opts.MaxConcurrentReconciles, "max-concurrent-reconciles", controllers.DefaultMaxConcurrentReconciles,
		"Workers of the run controller: how many status writes the manager keeps in flight (docs/sizing.md).")
	fs.IntVar(&f.opts.MaxConcurrentDecisions, "max-concurrent-decisions", controllers.DefaultMaxConcurrentDecisions,
		"Workers of the decision controller: how many approvals are reviewed and applied at once.")
	fs.IntVar(&f.opts.MaxInFlight, "max-inflight-io", executor.DefaultMaxInFlight, "Model and tool calls running at once, in total (docs/sizing.md).")
	fs.IntVar(&f.opts.PerEndpoint, "max-inflight-per-endpoint", executor.DefaultPerEndpoint, "Model and tool calls running at once against one endpoint (host); "+
		"at least the runs that share one model endpoint at once, at most a share of --max-inflight-io so one slow endpoint cannot starve the others.")
	fs.IntVar(&f.opts.HotStatusBytes, "hot-status-bytes", loop.DefaultHotBytes, "Budget of a run's encoded status: older messages, past steps' calls and large values are sealed into AgentRunSegments beyond it.")
	fs.IntVar(&f.opts.SealValueBytes, "seal-value-bytes", loop.DefaultValueBytes, "A single message content, tool argument or result larger than this is sealed into a segment at once (at least 512).")
	fs.IntVar(&f.opts.SegmentCacheBytes, "segment-cache-bytes", store.DefaultSegmentCacheBytes, "Bytes of AgentRunSegments kept in memory (an LRU by content hash).")
	fs.Int64Var(&f.opts.MaxTranscriptBytes, "max-transcript-bytes", exagentv1.MaxTranscriptBytesLimit, "Cap on every run's transcript: a run gets the lower of this and its Agent's "+
		"limits.maxTranscriptBytes (default 8 MiB); between 1 MiB and 64 MiB (docs/etcd-budget.md).")
	fs.IntVar(&f.opts.MaxWaitingRunsPerNamespace, "max-waiting-runs-per-namespace", controllers.DefaultMaxWaitingRunsPerNamespace,
		"Most runs of one namespace that wait on a timer, an object or a callback at once (phase Waiting): a further wait is a failed call "+
			"the model sees (TooManyWaits); 0: no cap (docs/waits.md).")
	fs.DurationVar(&f.opts.ModelTimeout, "model-timeout", 2*time.Minute, "Timeout of one model request.")
	fs.DurationVar(&f.opts.ModelMaxRateLimitWait, "model-max-rate-limit-wait", controllers.DefaultMaxRateLimitWait,
		"Longest a model request waits out rate limits (a provider's 429, an Agent's model.rateLimit); the run's deadline and active time bound it too.")
	fs.StringVar(&f.opts.Holder, "holder-identity", "", "Identity of this process in run claims (default: hostname plus a random suffix; must be unique per process).")
	fs.StringVar(&f.signingSecret, "decision-signing-secret", "", "namespace/name of the Secret holding the key that signs admitted decisions and requesters "+
		"(created when missing); default POD_NAMESPACE/"+authz.DefaultSigningSecretName+" when POD_NAMESPACE is set, otherwise none; \"none\" disables signing.")
	fs.StringVar(&f.signingSecret, "decision-seal-secret", "", "Deprecated: the former name of --decision-signing-secret.")
	fs.BoolVar(&f.opts.ReleaseOnStop, "release-on-stop", true, "On SIGTERM, hand back owned runs with no tool call left in flight (after the drain) so another replica claims them at once.")
	fs.DurationVar(&f.opts.DrainTimeout, "drain-timeout", 20*time.Second, "On SIGTERM, how long model and tool calls already running go on; "+
		"with --release-on-stop their results are committed and the runs handed back (0: cancel them at once).")
	fs.DurationVar(&f.opts.LeaseSkewGrace, "lease-skew-grace", controllers.DefaultLeaseSkewGrace, "How long past another process's lease expiry a run is left alone before it is recovered "+
		"(clock skew between hosts; a negative value: none).")
	fs.StringVar(&f.egressAllowCIDRs, "egress-allow-cidrs", "", "Comma-separated CIDRs that model, tool, MCP and notification connections may reach although a default deny covers them "+
		"(loopback, private ranges, link-local and metadata addresses, the cluster's ranges); docs/tenancy.md, Egress.")
	fs.StringVar(&f.egressDenyCIDRs, "egress-deny-cidrs", "", "Comma-separated CIDRs those connections may never reach, whatever --egress-allow-cidrs or a namespace's allow-list says.")
	fs.StringVar(&f.clusterPodCIDRs, "cluster-pod-cidrs", "", "The cluster's pod CIDRs (comma-separated), denied to those connections unless allowed; the manager cannot discover them.")
	fs.StringVar(&f.clusterServiceCIDRs, "cluster-service-cidrs", "", "The cluster's service CIDRs (comma-separated), denied to those connections unless allowed.")
	fs.StringVar(&f.egressNamespaceConfig, "egress-namespace-config", "", "NAMESPACE/NAME of a ConfigMap, in a namespace tenants cannot write (the manager's own), whose data maps a tenant namespace "+
		"to the comma-separated CIDRs its runs may reach beyond the policy; empty: no namespace is widened.")
	fs.IntVar(&f.opts.MCPListConcurrency, "mcp-list-concurrency", mcplist.DefaultConcurrency, "MCP tools/list running at once, in all (one per server; one namespace takes at most half): "+
		"listings run beside the reconcile workers, so a server that never answers holds a slot, never a worker (docs/sizing.md).")
	fs.DurationVar(&f.opts.MCPListTimeout, "mcp-list-timeout", mcplist.DefaultTimeout, "Timeout of one MCP tools/list; a server that fails is asked again with backoff.")
	fs.StringVar(&f.watchNamespaces, "watch-namespaces", "", "Comma-separated namespaces this manager serves (ns1,ns2): it watches, reads Secrets, impersonates and writes in those only, "+
		"under Roles there (config/namespaced-install); empty: every namespace (docs/install.md, Namespace-scoped install).")
	fs.IntVar(&f.defaultTTLSeconds, "default-ttl-seconds-after-finished", 0, "TTL of an ended run whose spec.ttlSecondsAfterFinished and Agent's retention.ttlSecondsAfterFinished are unset: "+
		"it is deleted (archived first when its Agent has retention.archive) this many seconds after it ended; 0 keeps such runs (docs/retention.md).")
	fs.IntVar(&f.opts.RetentionWorkers, "retention-workers", retention.DefaultWorkers, "Ended runs archived and deleted at once; each holds its run's transcript in memory while its archive is sent.")
	fs.DurationVar(&f.opts.ArchiveTimeout, "archive-timeout", retention.DefaultArchiveTimeout, "Timeout of one attempt to send a run's archive to its Agent's retention.archive.")
	fs.DurationVar(&f.opts.AgentRecheckInterval, "agent-recheck-interval", controllers.DefaultAgentRecheckInterval, "How often a Ready Agent is checked again "+
		"(its Secrets read, its MCP servers listed); an Agent that is not Ready is checked sooner, with backoff. Its status is written only when it changed.")
	fs.StringVar(&f.uiURLTemplate, "ui-url-template", "", "Link every notification to the run's page (CloudEvents data.links.ui, a Slack button): a URL where {namespace} and {name} "+
		"stand for the run's, e.g. http://127.0.0.1:8000/runs/{namespace}/{name} (what kubectl approve ui serves, docs/ui.md); empty: no link.")
	fs.StringVar(&f.conversionService, "conversion-webhook-service", "", "NAMESPACE/NAME of the Service in front of the webhook server: the manager points every exagent CRD's conversion (v1alpha1 ⇄ v1beta1) "+
		"at its /convert and keeps it so (docs/upgrading.md); empty: the CRDs' conversion is left as installed.")
	fs.IntVar(&f.conversionPort, "conversion-webhook-port", 443, "Port of --conversion-webhook-service.")
	fs.StringVar(&f.conversionCAFile, "conversion-ca-file", "", "PEM CA bundle the apiserver is to trust for the conversion webhook (default: ca.crt in --webhook-cert-dir).")
	fs.BoolVar(&f.migrateStorage, "migrate-storage", true, "On the leader, rewrite objects an older release stored as v1alpha1 to v1beta1 (a StorageVersionMigration where the cluster serves "+
		"storagemigration.k8s.io/v1, else paced rewrites) and prune each CRD's status.storedVersions (docs/upgrading.md).")
	fs.Func("shard", "Serve only the runs, decisions and segments labelled exagent.io/shard=NAME (\"\": the unlabelled ones): this manager caches, works and leads "+
		"only that shard, with its own leader election Lease (docs/install.md, \"Scaling out\"); not given: every run.", func(v string) error {
		f.shard, f.shardGiven = v, true
		return nil
	})
	fs.StringVar(&f.shards, "shards", "", "Comma-separated shards new runs are placed on (the same list on every manager): the webhook stamps each new run with a stable hash "+
		"of its namespace and root over them, unless its Namespace pins one with the label exagent.io/shard; empty: runs are not stamped.")
	fs.BoolVar(&f.printVersion, "version", false, "Print the version, commit, Go version and platform of this binary, then exit.")
	opts := zap.Options{Development: false}
	opts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, opts, err
	}
	if err := f.validateSealing(); err != nil {
		return nil, opts, err
	}
	if err := f.validateRetention(); err != nil {
		return nil, opts, err
	}
	if f.opts.AgentRecheckInterval < time.Second {
		return nil, opts, fmt.Errorf("--agent-recheck-interval=%s: must be at least 1s", f.opts.AgentRecheckInterval)
	}
	if _, err := f.egressConfig(); err != nil {
		return nil, opts, err
	}
	if _, err := f.egressNamespaceKey(); err != nil {
		return nil, opts, err
	}
	namespaces, err := served.Parse(f.watchNamespaces)
	if err != nil {
		return nil, opts, err
	}
	f.opts.Namespaces = namespaces
	if err := f.parseShards(fs); err != nil {
		return nil, opts, err
	}
	if f.opts.UIURLTemplate, err = notify.ParseURLTemplate(f.uiURLTemplate); err != nil {
		return nil, opts, err
	}
	return f, opts, nil
}

// MinTranscriptCap is the lowest --max-transcript-bytes: below it, a few
// tool results of the largest size a value may have (64 KiB) would end a run.
const MinTranscriptCap = 1 << 20

// validateSealing refuses budgets that cannot hold a run's hot status, and
// a transcript cap outside what limits.maxTranscriptBytes means.
func (f *flags) validateSealing() error {
	switch {
	case f.opts.HotStatusBytes < 8<<10:
		return fmt.Errorf("--hot-status-bytes=%d: must be at least 8192 (the current step's calls and approvals stay hot)", f.opts.HotStatusBytes)
	case f.opts.SealValueBytes < loop.MinValueBytes || f.opts.SealValueBytes > f.opts.HotStatusBytes/4:
		return fmt.Errorf("--seal-value-bytes=%d: must be between %d and a quarter of --hot-status-bytes (%d)",
			f.opts.SealValueBytes, loop.MinValueBytes, f.opts.HotStatusBytes/4)
	case f.opts.SegmentCacheBytes < exagentv1.MaxSegmentBytes:
		return fmt.Errorf("--segment-cache-bytes=%d: must hold at least one segment (%d bytes)", f.opts.SegmentCacheBytes, exagentv1.MaxSegmentBytes)
	case f.opts.MaxTranscriptBytes < MinTranscriptCap || f.opts.MaxTranscriptBytes > exagentv1.MaxTranscriptBytesLimit:
		return fmt.Errorf("--max-transcript-bytes=%d: must be between %d (1 MiB) and %d (64 MiB, the most limits.maxTranscriptBytes admits)",
			f.opts.MaxTranscriptBytes, MinTranscriptCap, exagentv1.MaxTranscriptBytesLimit)
	}
	return nil
}

// validateRetention refuses retention settings that mean nothing.
func (f *flags) validateRetention() error {
	switch {
	case f.defaultTTLSeconds < 0 || f.defaultTTLSeconds > math.MaxInt32:
		return fmt.Errorf("--default-ttl-seconds-after-finished=%d: must be between 0 (runs with no TTL of their own are kept) and %d", f.defaultTTLSeconds, math.MaxInt32)
	case f.opts.RetentionWorkers < 1:
		return fmt.Errorf("--retention-workers=%d: must be at least 1", f.opts.RetentionWorkers)
	case f.opts.ArchiveTimeout <= 0:
		return fmt.Errorf("--archive-timeout=%s: must be positive", f.opts.ArchiveTimeout)
	case f.opts.MaxWaitingRunsPerNamespace < 0:
		return fmt.Errorf("--max-waiting-runs-per-namespace=%d: must be 0 (no cap) or more", f.opts.MaxWaitingRunsPerNamespace)
	}
	return nil
}

// egressConfig is the egress policy the flags set (the manager's own
// ports and addresses are added at start).
func (f *flags) egressConfig() (egress.Config, error) {
	var c egress.Config
	for _, x := range []struct {
		name, value string
		into        *[]netip.Prefix
	}{
		{"--egress-allow-cidrs", f.egressAllowCIDRs, &c.Allow},
		{"--egress-deny-cidrs", f.egressDenyCIDRs, &c.Deny},
		{"--cluster-pod-cidrs", f.clusterPodCIDRs, &c.ClusterPods},
		{"--cluster-service-cidrs", f.clusterServiceCIDRs, &c.ClusterServices},
	} {
		p, err := egress.ParseCIDRs(x.value)
		if err != nil {
			return c, fmt.Errorf("%s: %w", x.name, err)
		}
		*x.into = p
	}
	return c, nil
}

// egressNamespaceKey is the namespace allow-list's ConfigMap, if any.
func (f *flags) egressNamespaceKey() (*types.NamespacedName, error) {
	if f.egressNamespaceConfig == "" {
		return nil, nil
	}
	ns, name, ok := strings.Cut(f.egressNamespaceConfig, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--egress-namespace-config %q: want NAMESPACE/NAME", f.egressNamespaceConfig)
	}
	return &types.NamespacedName{Namespace: ns, Name: name}, nil
}

// ownPorts are the ports this process listens on, which no outbound
// connection may reach on its own addresses.
func (f *flags) ownPorts() []egress.Port {
	var out []egress.Port
	add := func(name, addr string) {
		if addr == "" || addr == "0" {
			return
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return
		}
		if n, err := strconv.ParseUint(port, 10, 16); err == nil && n != 0 {
			out = append(out, egress.Port{Name: name, Port: uint16(n)})
		}
	}
	if f.enableWebhooks {
		add("webhook", net.JoinHostPort(f.webhookHost, strconv.Itoa(f.webhookPort)))
	}
	add("metrics", f.metricsAddr)
	add("health probe", f.probeAddr)
	add("pprof", f.pprofAddr)
	return out
}

// ownAddrs are this host's interface addresses: in a pod, its pod IPs.
func ownAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

func main() {
	if err := run(); err != nil {
		ctrl.Log.WithName("setup").Error(err, "manager exited")
		os.Exit(1)
	}
}

func run() error {
	f, zapOpts, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		return err
	}
	build := version.Get()
	if f.printVersion {
		_, err := fmt.Fprintln(os.Stdout, "manager", build.String())
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	// The first line of every manager log says which build it is.
	log.Info("exagent manager", "version", build.Version, "commit", build.Commit, "goVersion", build.GoVersion, "platform", build.Platform)
	if err := registerBuildInfo(metrics.Registry, build); err != nil {
		return err
	}
	if tuneGC() {
		log.V(1).Info("GOGC not set: collecting at the manager's default", "gcPercent", defaultGCPercent)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	if err := exagentv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	// v1alpha1 is served, deprecated: the conversion webhook converts it
	// from and to v1beta1, the only version the manager reads and writes.
	if err := exagentv1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	cfg, err := ctrl.GetConfig() // honours --kubeconfig, KUBECONFIG, in-cluster
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	hooks, err := failpoints(cfg) // only a -tags chaos build has any (test/chaos)
	if err != nil {
		return err
	}

	// The metrics endpoint authenticates every scrape (TokenReview) and
	// authorizes it (SubjectAccessReview: get on the non-resource URL
	// /metrics, which the exagent-metrics-reader ClusterRole grants), as the
	// kubebuilder scaffold does. --metrics-secure=false serves plain HTTP
	// without either, for a loopback-only endpoint.
	metricsOpts := metricsserver.Options{BindAddress: f.metricsAddr, SecureServing: f.metricsSecure}
	if f.metricsSecure {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	tlsOpts := []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS12 }}
	if f.webhookClientCA != "" {
		// Only the apiserver may ask the webhooks to stamp and sign an identity.
		requireClient, err := exagentwebhook.RequireClientCert(f.webhookClientCA)
		if err != nil {
			return fmt.Errorf("--webhook-client-ca: %w", err)
		}
		tlsOpts = append(tlsOpts, requireClient)
	}
	webhookServer := webhook.NewServer(webhook.Options{
		Host: f.webhookHost, Port: f.webhookPort, CertDir: f.webhookCertDir, TLSOpts: tlsOpts,
	})
	if f.webhookClientCA != "" {
		webhookServer = exagentwebhook.GateClientCerts(webhookServer)
	}
	egressCfg, _ := f.egressConfig() // validated by parseFlags
	egressCfg.OwnPorts, egressCfg.OwnAddrs = f.ownPorts(), ownAddrs()
	nsKey, _ := f.egressNamespaceKey()
	cacheOpts := store.CacheOptions()
	// Every informer covers the served namespaces only (the egress
	// ConfigMap keeps its own namespace, the manager's).
	cacheOpts.DefaultNamespaces = f.opts.Namespaces.CacheNamespaces()
	// A shard's manager caches (and so lists at start) its shard only.
	f.opts.Shard.Cache(&cacheOpts)
	if nsKey != nil {
		// Only that one ConfigMap is watched.
		cacheOpts.ByObject[&corev1.ConfigMap{}] = egress.CacheByObject(*nsKey)
		egressCfg.AllowHint = "allow with --egress-allow-cidrs, or for one namespace in ConfigMap " + nsKey.String()
	}
	policy := egress.New(egressCfg)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        f.probeAddr,
		PprofBindAddress:              f.pprofAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              f.leaderElectionID,
		LeaderElectionNamespace:       f.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhookServer,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	signer, err := loadSigner(ctx, mgr, f.signingSecret)
	if err != nil {
		return err
	}
	// The manager's own identity never decides on a run: learn it from the
	// credentials this process really uses, once, for the webhook and the
	// controller alike.
	f.opts.Placer = &shard.Placer{Shards: f.shardSet, Reader: mgr.GetClient()}
	if f.opts.Shard.Sharded() || f.opts.Placer.Enabled() {
		log.Info("shards", "serving", f.opts.Shard.String(), "shards", f.shardSet.String(), "leaderElectionID", f.leaderElectionID)
	}
	self, err := authz.Self(ctx, mgr.GetClient())
	if err != nil {
		return fmt.Errorf("the manager's identity: %w", err)
	}
	log.Info("the manager's identity never decides on a run", "user", self)
	if !f.opts.Namespaces.All() {
		// Fail now, naming the namespace, rather than with informers that
		// never sync.
		if err := served.CheckRights(ctx, mgr.GetClient(), f.opts.Namespaces); err != nil {
			return err
		}
		log.Info("serving only the namespaces of --watch-namespaces: nothing elsewhere is read, written or admitted", "namespaces", f.opts.Namespaces.Names())
	}
	holder := f.opts.Holder
	if holder == "" {
		holder = controllers.NewHolder()
	}
	// Traces: OTLP/HTTP configured by the standard OTEL_* variables, off unless an endpoint is set.
	tracer, stopTracing, err := telemetry.FromEnv(ctx, holder)
	if err != nil {
		return fmt.Errorf("traces: %w", err)
	}
	defer func() {
		tracer.Close(time.Now())
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(sctx); err != nil {
			log.Error(err, "flushing the traces")
		}
	}()
	var allowLists egress.AllowLists
	if nsKey != nil {
		l := egress.NewConfigMapAllowLists(*nsKey, ctrl.Log.WithName("egress"))
		if err := l.Watch(ctx, mgr.GetCache()); err != nil {
			return err
		}
		allowLists = l
	}
	log.Info("egress policy: link-local, metadata, loopback, private and other special-purpose addresses, the cluster's ranges and the manager's own ports are denied unless allowed",
		"allow", egress.String(egressCfg.Allow), "deny", egress.String(egressCfg.Deny),
		"clusterPods", egress.String(egressCfg.ClusterPods), "clusterServices", egress.String(egressCfg.ClusterServices),
		"ownPorts", egressCfg.OwnPorts, "namespaceConfig", f.egressNamespaceConfig)
	o := f.opts
	switch {
	case o.CallbackBaseURL != "" && f.triggerAddr == "":
		return errors.New("--callback-base-url needs the trigger listener that serves it: set --trigger-bind-address")
	case o.CallbackBaseURL != "" && signer == nil:
		return errors.New("--callback-base-url needs the signing key its tokens are made with: --decision-signing-secret must not be none")
	}
	o.Egress, o.EgressAllowLists = policy, allowLists
	o.Tracer, o.Signer, o.ManagerIdentity = tracer, signer, self
	o.Holder, o.Hooks, o.RunMetrics = holder, hooks, true
	o.DefaultTTLAfterFinished = time.Duration(f.defaultTTLSeconds) * time.Second
	c, err := controllers.Setup(ctx, mgr, o)
	if err != nil {
		return err
	}
	triggerCerts := f.triggerCertDir
	if triggerCerts == "" {
		triggerCerts = f.webhookCertDir
	}
	var cbs http.Handler
	if c.Callbacks != nil {
		cbs = c.Callbacks
	}
	if err := addTriggerListener(mgr, c.Triggers, cbs, f.triggerAddr, triggerCerts, nil); err != nil {
		return err
	}
	if err := addTriggerEvents(mgr, c); err != nil {
		return fmt.Errorf("trigger events: %w", err)
	}
	if f.enableWebhooks {
		wopts := []exagentwebhook.Option{exagentwebhook.WithManagerIdentity(self), exagentwebhook.WithNamespaces(f.opts.Namespaces),
			exagentwebhook.WithPlacer(f.opts.Placer)}
		if signer != nil {
			wopts = append(wopts, exagentwebhook.WithSigner(signer))
		}
		if err := exagentwebhook.SetupWithManager(mgr, wopts...); err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
	}
	if err := addCRDConversion(mgr, f); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	ready := healthz.Ping
	if f.enableWebhooks {
		ready = mgr.GetWebhookServer().StartedChecker()
	}
	if err := mgr.AddReadyzCheck("readyz", ready); err != nil {
		return fmt.Errorf("ready check: %w", err)
	}
	log.Info("starting the manager", "holder", c.Runs.Holder, "leaderElection", f.leaderElect, "traces", tracer != nil,
		"maxConcurrentReconciles", f.opts.MaxConcurrentReconciles, "maxInFlight", f.opts.MaxInFlight, "perEndpoint", f.opts.PerEndpoint)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// loadSigner reads (or creates) the decision signing key. Every replica uses the
// same Secret, so a decision signing keyed by one replica's webhook verifies in
// another's controller.
func loadSigner(ctx context.Context, mgr ctrl.Manager, flagValue string) (*authz.Signer, error) {
	ref := flagValue
	if ref == "" {
		if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
			ref = ns + "/" + authz.DefaultSigningSecretName
		}
	}
	if ref == "" || ref == "none" {
		ctrl.Log.WithName("setup").Info("decisions are not sealed: the controller re-checks RBAC and policy only")
		return nil, nil
	}
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return nil, fmt.Errorf("--decision-signing-secret %q: want namespace/name", ref)
	}
	signer, err := authz.LoadSigner(ctx, mgr.GetAPIReader(), mgr.GetClient(), types.NamespacedName{Namespace: ns, Name: name})
	if err != nil {
		return nil, fmt.Errorf("decision signing key: %w", err)
	}
	return signer, nil
}
