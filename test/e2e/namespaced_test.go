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

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/notify"
	"github.com/exagent-io/exagent/internal/testing/mcptest"
	"github.com/exagent-io/exagent/internal/testing/procs"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// TestNamespacedManager runs the real manager binary as its own
// ServiceAccount — a token from the TokenRequest API, never an admin —
// under exactly the RBAC config/namespaced-install renders (its Roles,
// RoleBindings and ClusterRoles applied to a control plane of this test's
// own, with the overlay's webhook configurations and their
// namespaceSelectors), with the flags its Deployment carries
// (--watch-namespaces, the egress ConfigMap) and leader election in its
// namespace.
//
// In a served namespace a run works end to end: a builtin tool acts as the
// run's ServiceAccount (it reads a ConfigMap the manager itself may not),
// an http tool and an MCP tool send headers from a Secret, a person with a
// client certificate approves with kubectl approve, and the notify sink
// receives the approval request and the end, signed with a Secret's key. A run and a decision created in a
// namespace the manager does not serve — before the served run, so the
// manager, busy with the other, would have seen them — are never written
// (their resourceVersion does not move; no status, no claim, no stamp, no
// Event), and kubectl approve says at once that no manager serves them.
// The manager's own credentials are refused by the apiserver (403) for a
// Secret outside its namespaces, and its log holds no refusal at all.
//
// The manager is the real binary, as in the rest of this suite, because
// the point is the process a platform team deploys, authenticated as it
// would be in its pod; the control plane is this test's own because the
// suite's shared one serves every namespace with a cluster-wide manager.
func TestNamespacedManager(t *testing.T) {
	objs := build(t, "config/namespaced-install")
	watched := watchNamespacesArg(t, objs)
	if len(watched) == 0 {
		t.Fatal("the manager Deployment of config/namespaced-install has no --watch-namespaces")
	}
	served, elsewhere := watched[0], "elsewhere"
	c := startNamespacedCluster(t, objs, append(watched, elsewhere))
	manager := c.startManager(t, objs)

	effect := newHeaderServer(t)
	sink := newHeaderServer(t)
	mcpServer := mcptest.Start()
	t.Cleanup(mcpServer.Close)

	// The namespace nobody serves first: by the time the served run ends,
	// the manager has had every chance to touch these.
	c.apply(t, tenantFixtures(elsewhere, effect.URL, mcpServer.URL, sink.URL))
	c.must(t, "admin", decisionYAML(elsewhere, "pay"), "create", "-f", "-")
	before := c.getRun(t, elsewhere, "pay")
	beforeDecision := c.decision(t, elsewhere, "by-hand")

	c.apply(t, tenantFixtures(served, effect.URL, mcpServer.URL, sink.URL))
	c.must(t, "admin", "", "create", "rolebinding", "alice-approves", "-n", served, "--clusterrole=exagent-approver", "--user=alice")

	t.Run("a run in a served namespace works end to end", func(t *testing.T) {
		c.must(t, "alice", "", "approve", "wait", "pay", "-n", served, "--for=paused", "--timeout=2m")
		paused := c.getRun(t, served, "pay")
		if got := paused.Annotations[exagentv1.AnnotationAdmittedBy]; got != "system:serviceaccount:"+managerNamespace+":"+managerSA {
			t.Errorf("admitted-by = %q, want the manager's ServiceAccount", got)
		}
		read := paused.Status.Call("inv-1")
		if read == nil || read.State != exagentv1.CallSucceeded || read.Outcome == nil || !strings.Contains(read.Outcome.Result, `"widgets":"12"`) {
			t.Errorf("the builtin read (as ServiceAccount ops-agent) is %+v, want it to have read the ConfigMap", read)
		}
		out := c.must(t, "alice", "", "approve", "pay", "-n", served, "--reason", "served here")
		if !strings.Contains(out, " approved by alice ") {
			t.Errorf("approve printed %q", out)
		}
		c.must(t, "alice", "", "approve", "wait", "pay", "-n", served, "--for=done", "--timeout=2m")
		final := c.getRun(t, served, "pay")
		if final.Status.Phase != exagentv1.PhaseSucceeded {
			t.Errorf("the run is %s (%s: %s), want Succeeded", final.Status.Phase, final.Status.Reason, final.Status.Message)
		}
		if got := effect.header("Authorization"); len(got) != 1 || got[0] != "Bearer tok-"+served {
			t.Errorf("the http tool sent Authorization %q, want once the Secret's value", got)
		}
		// The MCP server was listed (beside the workers) and called with
		// its header from a Secret.
		if calls := mcpServer.Calls("echo"); len(calls) != 1 || calls[0].Authorization != "Bearer mcp-"+served {
			t.Errorf("the MCP tool's calls: %+v, want one with the Secret's Authorization", calls)
		}
		eventually(t, 2*time.Minute, "the notify sink receives the approval request and the end", func() bool {
			types := sink.cloudEventTypes()
			return strings.Contains(types, "io.exagent.run.approval-requested") && strings.Contains(types, "io.exagent.run.run-ended")
		})
		// Signed with the key of the Agent's signing Secret.
		for _, r := range sink.all() {
			ts, err := strconv.ParseInt(r.header.Get("webhook-timestamp"), 10, 64)
			if err != nil {
				t.Fatalf("a notification without a timestamp: %v", r.header)
			}
			want, err := notify.Sign("sign-"+served, r.header.Get("webhook-id"), time.Unix(ts, 0), r.body)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.header.Get("webhook-signature"); got != want.Get("webhook-signature") {
				t.Errorf("notification %s signed %q, want %q (the signing Secret's key)", r.header.Get("webhook-id"), got, want.Get("webhook-signature"))
			}
		}
	})

	t.Run("a run in a namespace not served is never touched", func(t *testing.T) {
		after := c.getRun(t, elsewhere, "pay")
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("the run was written: resourceVersion %s → %s", before.ResourceVersion, after.ResourceVersion)
		}
		if after.Status.Phase != "" || after.Status.Claim != nil || len(after.Finalizers) != 0 || after.Spec.RequestedBy != nil {
			t.Errorf("the run was touched: phase %q, claim %+v, finalizers %v, requestedBy %+v",
				after.Status.Phase, after.Status.Claim, after.Finalizers, after.Spec.RequestedBy)
		}
		if _, ok := after.Annotations[exagentv1.AnnotationAdmittedBy]; ok {
			t.Errorf("the run carries %s: %v", exagentv1.AnnotationAdmittedBy, after.Annotations)
		}
		if d := c.decision(t, elsewhere, "by-hand"); d.ResourceVersion != beforeDecision.ResourceVersion || d.Status.Phase != "" {
			t.Errorf("the decision was written: resourceVersion %s → %s, phase %q", beforeDecision.ResourceVersion, d.ResourceVersion, d.Status.Phase)
		}
		var events eventsv1.EventList
		if err := c.env.Client.List(t.Context(), &events, client.InNamespace(elsewhere)); err != nil {
			t.Fatal(err)
		}
		var core corev1.EventList
		if err := c.env.Client.List(t.Context(), &core, client.InNamespace(elsewhere)); err != nil {
			t.Fatal(err)
		}
		if len(events.Items)+len(core.Items) != 0 {
			t.Errorf("%d Events were created in %s", len(events.Items)+len(core.Items), elsewhere)
		}
		if len(effect.header("Authorization")) != 1 || len(mcpServer.Calls("echo")) != 1 {
			t.Errorf("the tool endpoints saw %d http and %d MCP calls, want only the served run's", len(effect.header("Authorization")), len(mcpServer.Calls("echo")))
		}
	})

	t.Run("kubectl approve says no manager serves it", func(t *testing.T) {
		sentence := `no exagent manager serves namespace "` + elsewhere + `"`
		for _, args := range [][]string{
			{"approve", "pay", "-n", elsewhere},
			{"approve", "deny", "pay", "-n", elsewhere},
			{"approve", "wait", "pay", "-n", elsewhere, "--for=paused", "--timeout=10m"},
			{"approve", "logs", "-f", "pay", "-n", elsewhere},
		} {
			r := c.kubectl(t, "admin", "", args...)
			if r.Err == nil || !strings.Contains(r.Stderr, sentence) {
				t.Errorf("kubectl %s: err %v, stderr %q; want a refusal saying %q", strings.Join(args, " "), r.Err, r.Stderr, sentence)
			}
		}
		if out := c.must(t, "admin", "", "approve", "show", "pay", "-n", elsewhere); !strings.Contains(out, sentence) {
			t.Errorf("show does not say %q:\n%s", sentence, out)
		}
		if r := c.kubectl(t, "admin", "", "approve", "list", "-n", elsewhere); r.Err != nil || !strings.Contains(r.Stderr, sentence) {
			t.Errorf("list: err %v, stderr %q; want a warning saying %q", r.Err, r.Stderr, sentence)
		}
		var list exagentv1.ApprovalDecisionList
		if err := c.env.Client.List(t.Context(), &list, client.InNamespace(elsewhere)); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 {
			t.Errorf("%d decisions in %s, want only the one made by hand", len(list.Items), elsewhere)
		}
		// And where a manager serves, nothing is said.
		if r := c.kubectl(t, "admin", "", "approve", "list", "-n", served); r.Err != nil || strings.Contains(r.Stderr, "serves") {
			t.Errorf("list in %s: err %v, stderr %q", served, r.Err, r.Stderr)
		}
	})

	t.Run("the apiserver refuses the manager outside its namespaces", func(t *testing.T) {
		mc := c.managerClient(t)
		ctx := t.Context()
		if err := mc.Get(ctx, types.NamespacedName{Namespace: served, Name: "payments-token"}, &corev1.Secret{}); err != nil {
			t.Fatalf("the manager's own credentials cannot get a Secret of %s, which it serves: %v", served, err)
		}
		for what, err := range map[string]error{
			"get Secret " + elsewhere + "/payments-token": mc.Get(ctx, types.NamespacedName{Namespace: elsewhere, Name: "payments-token"}, &corev1.Secret{}),
			"list Secrets in " + served:                   mc.List(ctx, &corev1.SecretList{}, client.InNamespace(served)),
			"list AgentRuns of the cluster":               mc.List(ctx, &exagentv1.AgentRunList{}),
			"get ConfigMap " + served + "/inventory":      mc.Get(ctx, types.NamespacedName{Namespace: served, Name: "inventory"}, &corev1.ConfigMap{}),
		} {
			if !apierrors.IsForbidden(err) {
				t.Errorf("the manager may %s: err = %v, want 403 Forbidden", what, err)
			}
		}
	})

	t.Run("a namespace without the manager's Role stops it at start, named", func(t *testing.T) {
		p, err := procs.StartManager(procs.ManagerSpec{Name: "misconfigured manager", Bin: s.build.Path("manager"),
			Kubeconfig: c.kubeconfig("manager"), Args: c.managerArgs(objs, served+","+elsewhere),
			Env: s.envWith(c.kubeconfig("manager")), Log: filepath.Join(s.work, "namespaced-manager-misconfigured.log")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(syscall.SIGTERM, 20*time.Second) })
		eventually(t, 2*time.Minute, "the manager exits", p.Exited)
		want := "in namespace " + elsewhere + " it may not list agentruns.exagent.io"
		if p.Err() == nil || !strings.Contains(p.Tail(), want) || strings.Contains(p.Tail(), "in namespace "+served+" it may not") {
			t.Errorf("the manager serving %s and %s exited with %v; want an error naming only %s, saying %q:\n%s", served, elsewhere, p.Err(), elsewhere, want, p.Tail())
		}
	})

	_ = manager.Stop(syscall.SIGTERM, 20*time.Second)
	if log, err := os.ReadFile(manager.Log); err != nil {
		t.Error(err)
	} else if strings.Contains(strings.ToLower(string(log)), "forbidden") {
		for _, l := range strings.Split(string(log), "\n") {
			if strings.Contains(strings.ToLower(l), "forbidden") {
				t.Errorf("the manager was refused something under the overlay's RBAC: %s", l)
			}
		}
	}
}

// nsCluster is TestNamespacedManager's control plane: envtest with the
// CRDs, the overlay's webhook configurations pointed at the manager on
// 127.0.0.1, and kubeconfigs for the admin, alice (client certificates)
// and the manager (its ServiceAccount's token).
type nsCluster struct {
	env *testenv.Env
	dir string
}

func startNamespacedCluster(t *testing.T, objs []*unstructured.Unstructured, namespaces []string) *nsCluster {
	t.Helper()
	var mut []*admissionv1.MutatingWebhookConfiguration
	var val []*admissionv1.ValidatingWebhookConfiguration
	for _, o := range objs {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			mut = append(mut, into(t, o, &admissionv1.MutatingWebhookConfiguration{}))
		case "ValidatingWebhookConfiguration":
			val = append(val, into(t, o, &admissionv1.ValidatingWebhookConfiguration{}))
		}
	}
	quietClients.Do(func() { ctrllog.SetLogger(logr.Discard()) }) // controller-runtime's client wants a logger
	env, err := testenv.Start(testenv.Options{MutatingWebhooks: mut, ValidatingWebhooks: val})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	c := &nsCluster{env: env, dir: t.TempDir()}
	ctx := t.Context()
	for _, ns := range namespaces {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// Exactly the overlay's grants (and the objects they name: the
	// manager's namespace, ServiceAccount and egress ConfigMap).
	for _, kind := range []string{"Namespace", "ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		for _, o := range objs {
			if o.GetKind() == kind {
				if err := env.Client.Create(ctx, o.DeepCopy()); err != nil {
					t.Fatalf("applying %s %s/%s: %v", kind, o.GetNamespace(), o.GetName(), err)
				}
			}
		}
	}
	for user, groups := range map[string][]string{"admin": {"system:masters"}, "alice": nil} {
		u, err := env.AddUser(envtest.User{Name: user, Groups: groups}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := u.KubeConfig()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.kubeconfig(user), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	token := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](2 * 3600)}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: managerSA, Namespace: managerNamespace}}
	if err := env.Client.SubResource("token").Create(ctx, sa, token); err != nil {
		t.Fatalf("a token for the manager's ServiceAccount: %v", err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos[managerSA] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kc.Contexts["manager"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: managerSA}
	kc.CurrentContext = "manager"
	if err := clientcmd.WriteToFile(*kc, c.kubeconfig("manager")); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *nsCluster) kubeconfig(user string) string { return filepath.Join(c.dir, user+".kubeconfig") }

// managerClient authenticates as the manager does.
func (c *nsCluster) managerClient(t *testing.T) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig("manager"))
	if err != nil {
		t.Fatal(err)
	}
	mc, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: c.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return mc
}

func (c *nsCluster) kubectl(t *testing.T, user, stdin string, args ...string) result {
	t.Helper()
	return runEnv(t, s.envWith(c.kubeconfig(user)), user+"@namespaced", stdin, filepath.Join(s.k8sBin, "kubectl"), args...)
}

func (c *nsCluster) must(t *testing.T, user, stdin string, args ...string) string {
	t.Helper()
	r := c.kubectl(t, user, stdin, args...)
	if r.Err != nil {
		t.Fatalf("kubectl %s (as %s): %v\n%s", strings.Join(args, " "), user, r.Err, r.Stderr)
	}
	return r.Stdout
}

func (c *nsCluster) apply(t *testing.T, yaml string) {
	t.Helper()
	c.must(t, "admin", yaml, "apply", "-f", "-")
}

func (c *nsCluster) getRun(t *testing.T, ns, name string) *exagentv1.AgentRun {
	t.Helper()
	run := &exagentv1.AgentRun{}
	if err := c.env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, run); err != nil {
		t.Fatal(err)
	}
	return run
}

func (c *nsCluster) decision(t *testing.T, ns, name string) *exagentv1.ApprovalDecision {
	t.Helper()
	d := &exagentv1.ApprovalDecision{}
	if err := c.env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// managerArgs are bin/manager's arguments but its --kubeconfig (the
// manager's token: c.kubeconfig("manager")): the flags
// of the overlay's Deployment that say what it serves (watch, when not
// empty, replaces its --watch-namespaces), and local addresses.
func (c *nsCluster) managerArgs(objs []*unstructured.Unstructured, watch string) []string {
	wh := c.env.WebhookInstallOptions
	args := []string{
		"--webhook-cert-dir", wh.LocalServingCertDir,
		"--webhook-client-ca", c.env.WebhookClient.CAFile,
		"--webhook-host", wh.LocalServingHost,
		"--webhook-port", strconv.Itoa(wh.LocalServingPort),
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", "0",
		"--leader-elect", "--leader-election-namespace", managerNamespace,
		"--decision-signing-secret", managerNamespace + "/exagent-decision-seal",
		// The tests' tool endpoint and sink are on 127.0.0.1.
		"--egress-allow-cidrs", "127.0.0.1/32",
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != "exagent-manager" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		list, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		for _, a := range list {
			switch {
			case strings.HasPrefix(a, "--watch-namespaces=") && watch != "":
				args = append(args, "--watch-namespaces="+watch)
			case strings.HasPrefix(a, "--watch-namespaces="), strings.HasPrefix(a, "--egress-namespace-config="):
				args = append(args, strings.ReplaceAll(a, "$(POD_NAMESPACE)", managerNamespace))
			}
		}
	}
	return args
}

// startManager starts bin/manager (managerArgs) and waits until its
// webhook server accepts connections.
func (c *nsCluster) startManager(t *testing.T, objs []*unstructured.Unstructured) *procs.Process {
	t.Helper()
	wh := c.env.WebhookInstallOptions
	p, err := procs.StartManager(procs.ManagerSpec{Name: "namespaced manager", Bin: s.build.Path("manager"),
		Kubeconfig: c.kubeconfig("manager"), Args: c.managerArgs(objs, ""),
		Env: s.envWith(c.kubeconfig("manager")), Log: filepath.Join(s.work, "namespaced-manager.log"),
		Ready: procs.Listening(net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(wh.LocalServingPort))), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(syscall.SIGTERM, 20*time.Second) })
	return p
}

// tenantFixtures are one tenant's objects: the Secret the http and MCP
// tools' headers and the notification signing key come from, the ServiceAccount the builtin tool acts as (allowed
// to read ConfigMaps, which the manager itself is not), the ConfigMap it
// reads, the Agent and its run. Applied the same in both namespaces.
func tenantFixtures(ns, toolURL, mcpURL, sinkURL string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: payments-token, namespace: %[1]s}
stringData: {token: "Bearer tok-%[1]s", mcp: "Bearer mcp-%[1]s", signing: "sign-%[1]s"}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: ops-agent, namespace: %[1]s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: inventory, namespace: %[1]s}
data: {widgets: "12"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: read-configmaps, namespace: %[1]s}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ops-agent-reads, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: read-configmaps}
subjects:
- {kind: ServiceAccount, name: ops-agent, namespace: %[1]s}
---
apiVersion: exagent.io/v1alpha1
kind: Agent
metadata: {name: ops, namespace: %[1]s}
spec:
  model:
    provider: Scripted
    script:
    - toolCalls:
      - {id: inv-1, name: read_inventory, arguments: {name: inventory}}
      - {id: echo-1, name: echo, arguments: {text: hello}}
      - {id: charge-1, name: charge, arguments: {customer: c-42, amount: 5}}
    - text: charged
  tools:
  - name: read_inventory
    parameters: {type: object, properties: {name: {type: string}}, required: [name]}
    builtin: {operation: Get, kinds: [ConfigMap]}
  - name: charge
    parameters: {type: object, properties: {customer: {type: string}, amount: {type: integer}}}
    http:
      url: %[2]q
      timeout: 10s
      headers:
      - name: Authorization
        valueFrom: {name: payments-token, key: token}
  - name: echo
    mcp:
      url: %[3]q
      headers:
      - name: Authorization
        valueFrom: {name: payments-token, key: mcp}
  policy:
    default: Deny
    rules:
    - {name: reads, tools: [read_inventory, echo], action: Allow}
    - {name: charges, tools: [charge], action: Ask}
  notify:
  - name: oncall
    url: %[4]q
    signingSecretRef: {name: payments-token, key: signing}
  serviceAccountNames: [ops-agent]
---
apiVersion: exagent.io/v1alpha1
kind: AgentRun
metadata: {name: pay, namespace: %[1]s}
spec:
  agentRef: {name: ops}
  input: charge customer c-42
  serviceAccountName: ops-agent
`, ns, toolURL, mcpURL, sinkURL)
}

// decisionYAML is a decision someone writes by hand for run.
func decisionYAML(ns, run string) string {
	return fmt.Sprintf(`apiVersion: exagent.io/v1alpha1
kind: ApprovalDecision
metadata: {name: by-hand, namespace: %s}
spec:
  runRef: {name: %s}
  approvalID: a1
  decision: Approve
  revision: 1
  payloadHash: sha256:0000
`, ns, run)
}

// headerServer answers 200 with a small JSON body and records each
// request's headers and body.
type headerServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
}

type recorded struct {
	header http.Header
	body   []byte
}

func newHeaderServer(t *testing.T) *headerServer {
	h := &headerServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		h.mu.Lock()
		h.requests = append(h.requests, recorded{header: r.Header.Clone(), body: body})
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(h.Close)
	return h
}

// all returns what was received.
func (h *headerServer) all() []recorded {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]recorded(nil), h.requests...)
}

// header returns the values of name, one per request.
func (h *headerServer) header(name string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.requests {
		out = append(out, r.header.Get(name))
	}
	return out
}

// cloudEventTypes are the "type" of every CloudEvent received, space-separated.
func (h *headerServer) cloudEventTypes() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var types []string
	for _, r := range h.requests {
		var ev struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(r.body, &ev) == nil {
			types = append(types, ev.Type)
		}
	}
	return strings.Join(types, " ")
}
