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

package chart

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exagent-io/exagent/internal/certs"
)

// valueSet is one way to install the chart and what it must render.
type valueSet struct {
	values map[string]any
	check  func(t *testing.T, objs map[string]*unstructured.Unstructured)
}

// valueSets are the default values, four installs that differ from it in
// every group of values, and a sharded install (docs/install.md describes
// them).
func valueSets(t *testing.T) map[string]valueSet {
	caPEM, err := certs.GenerateServing(t.TempDir(), []string{"exagent-webhook-service.exagent-system.svc"})
	if err != nil {
		t.Fatal(err)
	}
	caBundle := base64.StdEncoding.EncodeToString(caPEM)
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	sharded := map[string]any{"shards": []any{"a", "b", longestShard}, "triggers": map[string]any{"enabled": true}}
	return map[string]valueSet{
		"default": {check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
			args := managerArgs(t, objs)
			for _, want := range []string{"--leader-elect", "--metrics-bind-address=:8443", "--egress-namespace-config=$(POD_NAMESPACE)/exagent-egress"} {
				if !slices.Contains(args, want) {
					t.Errorf("args %q lack %s", args, want)
				}
			}
			mustHave(t, objs, "ClusterRoleBinding/exagent-manager", "Issuer/exagent-system/exagent-selfsigned-issuer",
				"Certificate/exagent-system/exagent-serving-cert", "FlowSchema/exagent-manager-run-commits", "PodDisruptionBudget/exagent-system/exagent-manager")
			mustLack(t, objs, "ServiceMonitor/exagent-system/exagent-manager-metrics")
		}},
		"namespace-scoped with egress and extra flags": {
			values: map[string]any{
				"watchNamespaces": []any{"team-a", "team-b"},
				"replicas":        1, "leaderElection": map[string]any{"enabled": false}, "podDisruptionBudget": map[string]any{"enabled": false},
				"egress": map[string]any{
					"allowCIDRs": []any{"10.40.0.0/16"}, "denyCIDRs": []any{"10.40.9.0/24"},
					"clusterPodCIDRs": []any{"10.244.0.0/16"}, "clusterServiceCIDRs": []any{"10.96.0.0/12"},
					"namespaceAllowLists": map[string]any{"team-a": "10.50.3.7/32", "team-b": []any{"10.60.0.0/16", "fd00:60::/64"}},
				},
				"extraArgs": []any{"--default-ttl-seconds-after-finished=604800"},
				"extraEnv":  []any{map[string]any{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector.observability:4318"}},
			},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				mustLack(t, objs, "ClusterRole/exagent-manager", "ClusterRoleBinding/exagent-manager", "PodDisruptionBudget/exagent-system/exagent-manager")
				mustHave(t, objs, "ClusterRole/exagent-manager-reviews", "Role/team-a/exagent-manager-served", "RoleBinding/team-b/exagent-manager-served")
				args := managerArgs(t, objs)
				if slices.Contains(args, "--leader-elect") {
					t.Errorf("args %q: leader election is off", args)
				}
				for _, want := range []string{"--watch-namespaces=team-a,team-b", "--egress-allow-cidrs=10.40.0.0/16", "--egress-deny-cidrs=10.40.9.0/24",
					"--cluster-pod-cidrs=10.244.0.0/16", "--cluster-service-cidrs=10.96.0.0/12", "--default-ttl-seconds-after-finished=604800"} {
					if !slices.Contains(args, want) {
						t.Errorf("args %q lack %s", args, want)
					}
				}
				data, _, _ := unstructured.NestedStringMap(objs["ConfigMap/exagent-system/exagent-egress"].Object, "data")
				if diff := cmp.Diff(map[string]string{"team-a": "10.50.3.7/32", "team-b": "10.60.0.0/16,fd00:60::/64"}, data); diff != "" {
					t.Errorf("egress ConfigMap (-want +got):\n%s", diff)
				}
				for _, w := range webhooks(objs) {
					sel, _, _ := unstructured.NestedSlice(w, "namespaceSelector", "matchExpressions")
					if len(sel) != 1 || !cmp.Equal(sel[0].(map[string]any)["values"], []any{"team-a", "team-b"}) {
						t.Errorf("webhook %v: namespaceSelector %v, want the served namespaces", w["name"], sel)
					}
				}
			},
		},
		"certificates from a Secret, no metrics, no flow control": {
			values: map[string]any{
				"webhook":          map[string]any{"certificates": map[string]any{"source": "secret", "caBundle": caBundle}},
				"metrics":          map[string]any{"enabled": false},
				"flowControl":      map[string]any{"enabled": false},
				"image":            map[string]any{"repository": "registry.example.com/exagent", "digest": digest, "pullPolicy": "IfNotPresent"},
				"imagePullSecrets": []any{map[string]any{"name": "registry"}},
				"resources":        map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "256Mi"}, "limits": map[string]any{"memory": "1Gi"}},
				"nodeSelector":     map[string]any{"kubernetes.io/os": "linux"},
			},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				mustLack(t, objs, "Issuer/exagent-system/exagent-selfsigned-issuer", "Certificate/exagent-system/exagent-serving-cert",
					"Service/exagent-system/exagent-manager-metrics", "FlowSchema/exagent-manager-leases", "PriorityLevelConfiguration/exagent-manager")
				for _, w := range webhooks(objs) {
					if got, _, _ := unstructured.NestedString(w, "clientConfig", "caBundle"); got != caBundle {
						t.Errorf("webhook %v: caBundle %q, want the one given", w["name"], got)
					}
				}
				for _, k := range []string{"MutatingWebhookConfiguration/exagent-mutating-webhook-configuration", "ValidatingWebhookConfiguration/exagent-validating-webhook-configuration"} {
					if a := objs[k].GetAnnotations(); a["cert-manager.io/inject-ca-from"] != "" {
						t.Errorf("%s asks cert-manager's CA injector: %v", k, a)
					}
				}
				if !slices.Contains(managerArgs(t, objs), "--metrics-bind-address=0") {
					t.Error("metrics are not turned off")
				}
				c := container(t, objs)
				if c["image"] != "registry.example.com/exagent@"+digest {
					t.Errorf("image %v", c["image"])
				}
			},
		},
		"the trigger listener behind an Ingress": {
			values: map[string]any{"triggers": map[string]any{"enabled": true, "ingress": map[string]any{
				"enabled": true, "className": "nginx", "host": "hooks.example.com", "tlsSecretName": "hooks-tls",
				"annotations": map[string]any{"nginx.ingress.kubernetes.io/backend-protocol": "HTTPS"}}}},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				mustHave(t, objs, "Service/exagent-system/exagent-triggers", "Ingress/exagent-system/exagent-triggers")
				if !slices.Contains(managerArgs(t, objs), "--trigger-bind-address=:9444") {
					t.Errorf("the manager does not serve the trigger listener: %v", managerArgs(t, objs))
				}
				ing := objs["Ingress/exagent-system/exagent-triggers"]
				if ing == nil {
					return
				}
				rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
				if len(rules) != 1 || rules[0].(map[string]any)["host"] != "hooks.example.com" {
					t.Errorf("Ingress rules %v", rules)
				}
				paths, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "http", "paths")
				if len(paths) != 1 || paths[0].(map[string]any)["path"] != "/triggers/" {
					t.Errorf("Ingress paths %v, want only /triggers/", paths)
				}
				if tls, _, _ := unstructured.NestedSlice(ing.Object, "spec", "tls"); len(tls) != 1 {
					t.Errorf("Ingress tls %v", tls)
				}
			},
		},
		"shards, one with the longest name, and the trigger listener": {
			values: sharded,
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				checkShards(t, objs, sharded)
			},
		},
		"ServiceMonitor, alerts and a ClusterIssuer": {
			values: map[string]any{
				"metrics": map[string]any{
					"serviceMonitor":  map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}, "interval": "30s"},
					"prometheusRules": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
				},
				"webhook": map[string]any{"certificates": map[string]any{"issuerRef": map[string]any{"kind": "ClusterIssuer", "name": "corp-ca"}}},
			},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				mustLack(t, objs, "Issuer/exagent-system/exagent-selfsigned-issuer")
				for _, k := range []string{"Certificate/exagent-system/exagent-serving-cert", "Certificate/exagent-system/exagent-metrics-cert"} {
					ref, _, _ := unstructured.NestedStringMap(objs[k].Object, "spec", "issuerRef")
					if diff := cmp.Diff(map[string]string{"kind": "ClusterIssuer", "name": "corp-ca"}, ref); diff != "" {
						t.Errorf("%s issuerRef (-want +got):\n%s", k, diff)
					}
				}
				sm := objs["ServiceMonitor/exagent-system/exagent-manager-metrics"]
				if sm == nil {
					t.Fatal("no ServiceMonitor")
				}
				if sm.GetLabels()["release"] != "prometheus" {
					t.Errorf("ServiceMonitor labels %v", sm.GetLabels())
				}
				endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				if len(endpoints) != 1 || endpoints[0].(map[string]any)["interval"] != "30s" {
					t.Errorf("ServiceMonitor endpoints %v", endpoints)
				}
				rules := 0
				for _, o := range objs {
					if o.GetKind() == "PrometheusRule" {
						rules++
						if o.GetLabels()["release"] != "prometheus" {
							t.Errorf("%s labels %v", key(o), o.GetLabels())
						}
					}
				}
				if rules == 0 {
					t.Error("no PrometheusRule")
				}
			},
		},
	}
}

// TestChartValueSets renders the chart with each value set, checks what it
// must render, and has a real kube-apiserver accept every object (and the
// CRDs of crds/) in a server-side dry run.
func TestChartValueSets(t *testing.T) {
	env := cluster(t)
	for name, vs := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			objs := render(t, vs.values)
			vs.check(t, byKey(objs))
			for _, o := range append(crdObjects(t), objs...) {
				err := env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o),
					client.FieldOwner("exagent-chart-test"), client.ForceOwnership, client.DryRunAll)
				if err != nil {
					t.Errorf("server-side dry run of %s: %v", key(o), err)
				}
			}
		})
	}
}

// TestChartRefusesValues: values that would install something broken stop
// the rendering with a message naming the value.
func TestChartRefusesValues(t *testing.T) {
	long := strings.Repeat("s", 41)
	for name, tc := range map[string]struct {
		values map[string]any
		want   []string // in the message, each
	}{
		"the latest tag":                {values: map[string]any{"image": map[string]any{"tag": "latest"}}, want: []string{"image.tag"}},
		"an unknown certificate source": {values: map[string]any{"webhook": map[string]any{"certificates": map[string]any{"source": "vault"}}}, want: []string{"source"}},
		"a Secret without its CA":       {values: map[string]any{"webhook": map[string]any{"certificates": map[string]any{"source": "secret"}}}, want: []string{"webhook.certificates.caBundle is required"}},
		"a namespace that is no name":   {values: map[string]any{"watchNamespaces": []any{"Team-A"}}, want: []string{"watchNamespaces"}},
		"a misspelt value":              {values: map[string]any{"replica": 3}, want: []string{"replica"}},
		"an Ingress without a host": {values: map[string]any{"triggers": map[string]any{"enabled": true, "ingress": map[string]any{"enabled": true}}},
			want: []string{"triggers.ingress.host is required"}},
		"a shard that is no DNS label": {values: map[string]any{"shards": []any{"a", "Shard_B"}}, want: []string{"/shards/1", "Shard_B"}},
		"an empty shard name":          {values: map[string]any{"shards": []any{"a", ""}}, want: []string{"/shards/1", "''"}},
		"a shard name too long for its Deployment": {values: map[string]any{"shards": []any{long}},
			want: []string{"/shards/0", "maxLength", "40"}},
		"a shard listed twice": {values: map[string]any{"shards": []any{"a", "b", "a"}}, want: []string{"/shards", "0 and 2"}},
		"shards without leader election": {values: map[string]any{"shards": []any{"a", "b"}, "leaderElection": map[string]any{"enabled": false}},
			want: []string{"shards [a,b] need leaderElection.enabled true"}},
	} {
		t.Run(name, func(t *testing.T) {
			err := renderErr(t, tc.values)
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want one naming %q", err, want)
				}
			}
		})
	}
}

func mustHave(t *testing.T, objs map[string]*unstructured.Unstructured, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if objs[k] == nil {
			t.Errorf("renders no %s", k)
		}
	}
}

func mustLack(t *testing.T, objs map[string]*unstructured.Unstructured, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if objs[k] != nil {
			t.Errorf("renders %s", k)
		}
	}
}

func container(t *testing.T, objs map[string]*unstructured.Unstructured) map[string]any {
	t.Helper()
	d := objs["Deployment/exagent-system/exagent-manager"]
	if d == nil {
		t.Fatal("no manager Deployment")
	}
	return deploymentContainer(t, d)
}

// deploymentContainer is the manager container of Deployment d.
func deploymentContainer(t *testing.T, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("%d containers", len(cs))
	}
	return cs[0].(map[string]any)
}

func managerArgs(t *testing.T, objs map[string]*unstructured.Unstructured) []string {
	t.Helper()
	args, _, _ := unstructured.NestedStringSlice(container(t, objs), "args")
	return args
}

// webhooks are every webhook of both configurations.
func webhooks(objs map[string]*unstructured.Unstructured) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o.GetKind() == "MutatingWebhookConfiguration" || o.GetKind() == "ValidatingWebhookConfiguration" {
			ws, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, w := range ws {
				out = append(out, w.(map[string]any))
			}
		}
	}
	return out
}
