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
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// kustomizeBin is the kustomize the Makefile pins (bin/kustomize), built
// with `make kustomize` when missing.
func kustomizeBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(s.root, "bin", "kustomize")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("make", "kustomize")
	cmd.Dir = s.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make kustomize: %v\n%s", err, out)
	}
	return bin
}

// objects splits a YAML stream into objects.
func objects(t *testing.T, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("decoding %s: %v", doc, err)
		}
		out = append(out, u)
	}
}

// TestDefaultKustomization: `kustomize build config/default` succeeds, holds
// what a production install needs, and the apiserver accepts every object in
// a server-side dry run. cert-manager is not installed in the dev cluster:
// a minimal copy of its Certificate and Issuer CRDs (testdata) is.
func TestDefaultKustomization(t *testing.T) {
	cmd := exec.Command(kustomizeBin(t), "build", "config/default")
	cmd.Dir = s.root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build config/default: %v\n%s", err, stderr.String())
	}
	objs := objects(t, out)

	got := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		got[o.GetKind()+"/"+o.GetName()] = o
	}
	for _, want := range []string{
		"Namespace/exagent-system",
		"CustomResourceDefinition/agents.exagent.io",
		"CustomResourceDefinition/agentruns.exagent.io",
		"CustomResourceDefinition/approvaldecisions.exagent.io",
		"ServiceAccount/exagent-manager",
		"ClusterRole/exagent-manager",
		"ClusterRole/exagent-viewer",
		"ClusterRole/exagent-editor",
		"ClusterRole/exagent-approver",
		"ClusterRole/exagent-resolver",
		"ClusterRoleBinding/exagent-manager",
		"Deployment/exagent-manager",
		"Service/exagent-manager-metrics",
		"Service/exagent-webhook-service",
		"Certificate/exagent-serving-cert",
		"Certificate/exagent-metrics-cert",
		"Issuer/exagent-selfsigned-issuer",
		"MutatingWebhookConfiguration/exagent-mutating-webhook-configuration",
		"ValidatingWebhookConfiguration/exagent-validating-webhook-configuration",
		"FlowSchema/exagent-manager-leases",
		"FlowSchema/exagent-manager-run-commits",
		"PriorityLevelConfiguration/exagent-manager",
		"ValidatingAdmissionPolicy/exagent-agentrun-spec",
		"ValidatingAdmissionPolicyBinding/exagent-agentrun-spec",
		"ValidatingAdmissionPolicy/exagent-approvaldecision-spec",
		"ValidatingAdmissionPolicyBinding/exagent-approvaldecision-spec",
	} {
		if got[want] == nil {
			t.Errorf("config/default lacks %s", want)
		}
	}
	for key, o := range got {
		switch o.GetKind() {
		case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration",
			"ValidatingWebhookConfiguration", "FlowSchema", "PriorityLevelConfiguration",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			if o.GetNamespace() != "" {
				t.Errorf("cluster-scoped %s has namespace %q", key, o.GetNamespace())
			}
		default:
			if o.GetNamespace() != "exagent-system" {
				t.Errorf("%s is in namespace %q, want exagent-system", key, o.GetNamespace())
			}
		}
	}
	t.Run("manager deployment", func(t *testing.T) { checkManagerDeployment(t, got["Deployment/exagent-manager"]) })
	t.Run("webhooks trust cert-manager's CA", func(t *testing.T) {
		for _, key := range []string{"MutatingWebhookConfiguration/exagent-mutating-webhook-configuration", "ValidatingWebhookConfiguration/exagent-validating-webhook-configuration"} {
			if o := got[key]; o != nil {
				if diff := cmp.Diff("exagent-system/exagent-serving-cert", o.GetAnnotations()["cert-manager.io/inject-ca-from"]); diff != "" {
					t.Errorf("%s inject-ca-from (-want +got):\n%s", key, diff)
				}
			}
		}
		if c := got["Certificate/exagent-serving-cert"]; c != nil {
			names, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames")
			if diff := cmp.Diff([]string{"exagent-webhook-service.exagent-system.svc", "exagent-webhook-service.exagent-system.svc.cluster.local"}, names); diff != "" {
				t.Errorf("certificate dnsNames (-want +got):\n%s", diff)
			}
		}
	})
	t.Run("metrics are served with cert-manager's certificate", func(t *testing.T) {
		checkMetricsCertificate(t, got)
	})
	t.Run("flow schemas match the manager", func(t *testing.T) {
		for _, name := range []string{"exagent-manager-leases", "exagent-manager-run-commits"} {
			fs := got["FlowSchema/"+name]
			if fs == nil {
				continue
			}
			rules, _, _ := unstructured.NestedSlice(fs.Object, "spec", "rules")
			for _, r := range rules {
				subjects, _, _ := unstructured.NestedSlice(r.(map[string]any), "subjects")
				for _, sub := range subjects {
					sa, _, _ := unstructured.NestedStringMap(sub.(map[string]any), "serviceAccount")
					if diff := cmp.Diff(map[string]string{"name": "exagent-manager", "namespace": "exagent-system"}, sa); diff != "" {
						t.Errorf("%s subject (-want +got):\n%s", name, diff)
					}
				}
			}
		}
	})

	t.Run("server-side dry run", func(t *testing.T) {
		must(t, "", "", "apply", "-f", filepath.Join(s.root, "test", "e2e", "testdata", "cert-manager-crds.yaml"))
		must(t, "", "", "wait", "--for=condition=Established", "--timeout=60s", "crd/certificates.cert-manager.io", "crd/issuers.cert-manager.io")
		// Namespaced objects are only dry-run admitted into a namespace
		// that exists: devcluster creates exagent-system for the manager.
		must(t, "", "", "get", "namespace", "exagent-system")
		applied := must(t, "", string(out), "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-")
		if n := strings.Count(applied, "(server dry run)"); n != len(objs) {
			t.Errorf("the server dry run accepted %d of %d objects", n, len(objs))
		}
		if r := kubectl(t, "", "", "get", "deployment", "exagent-manager", "-n", "exagent-system"); r.Err == nil {
			t.Errorf("a dry run created the Deployment")
		}
	})
}

// The Secret cert-manager writes the metrics certificate to, and where
// controller-runtime's metrics server looks for one (its CertDir default).
const (
	metricsCertSecret = "exagent-metrics-server-cert"
	metricsCertDir    = "/tmp/k8s-metrics-server/serving-certs"
)

// checkMetricsCertificate: the metrics Service has a cert-manager
// Certificate for its DNS names, and the manager mounts its Secret where
// the metrics server serves it from.
func checkMetricsCertificate(t *testing.T, got map[string]*unstructured.Unstructured) {
	c := got["Certificate/exagent-metrics-cert"]
	if c == nil {
		t.Fatal("config/default has no metrics Certificate")
	}
	names, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames")
	if diff := cmp.Diff([]string{"exagent-manager-metrics.exagent-system.svc", "exagent-manager-metrics.exagent-system.svc.cluster.local"}, names); diff != "" {
		t.Errorf("metrics certificate dnsNames (-want +got):\n%s", diff)
	}
	if secret, _, _ := unstructured.NestedString(c.Object, "spec", "secretName"); secret != metricsCertSecret {
		t.Errorf("metrics certificate secretName = %q, want %q", secret, metricsCertSecret)
	}
	var d appsv1.Deployment
	b, _ := got["Deployment/exagent-manager"].MarshalJSON()
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	volume := ""
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == metricsCertSecret {
			volume = v.Name
		}
	}
	mounted := false
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounted = mounted || (volume != "" && m.Name == volume && m.MountPath == metricsCertDir)
	}
	if !mounted {
		t.Errorf("the manager does not mount Secret %s at %s", metricsCertSecret, metricsCertDir)
	}
}

// TestPrometheusKustomization: the ServiceMonitor verifies the manager's
// metrics certificate (never insecureSkipVerify): the CA of the Secret
// config/default's Certificate writes, and a serverName that certificate
// names.
func TestPrometheusKustomization(t *testing.T) {
	build := func(dir string) []*unstructured.Unstructured {
		cmd := exec.Command(kustomizeBin(t), "build", dir)
		cmd.Dir = s.root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kustomize build %s: %v\n%s", dir, err, stderr.String())
		}
		return objects(t, out)
	}
	var certNames []string
	for _, o := range build("config/default") {
		if o.GetKind() == "Certificate" && o.GetName() == "exagent-metrics-cert" {
			certNames, _, _ = unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
		}
	}
	monitors := 0
	for _, o := range build("config/prometheus") {
		if o.GetKind() != "ServiceMonitor" {
			continue
		}
		monitors++
		endpoints, _, _ := unstructured.NestedSlice(o.Object, "spec", "endpoints")
		if len(endpoints) == 0 {
			t.Errorf("ServiceMonitor %s has no endpoints", o.GetName())
		}
		for i, e := range endpoints {
			tls, _, _ := unstructured.NestedMap(e.(map[string]any), "tlsConfig")
			if skip, _, _ := unstructured.NestedBool(tls, "insecureSkipVerify"); skip {
				t.Errorf("ServiceMonitor %s endpoint %d skips TLS verification", o.GetName(), i)
			}
			if ca, _, _ := unstructured.NestedString(tls, "ca", "secret", "name"); ca != metricsCertSecret {
				t.Errorf("ServiceMonitor %s endpoint %d CA from Secret %q, want %q", o.GetName(), i, ca, metricsCertSecret)
			}
			if name, _, _ := unstructured.NestedString(tls, "serverName"); name == "" || !slices.Contains(certNames, name) {
				t.Errorf("ServiceMonitor %s endpoint %d serverName %q is not a name of the metrics certificate %v", o.GetName(), i, name, certNames)
			}
		}
	}
	if monitors != 1 {
		t.Errorf("config/prometheus has %d ServiceMonitors, want 1", monitors)
	}
}

func checkManagerDeployment(t *testing.T, o *unstructured.Unstructured) {
	if o == nil {
		t.Fatal("config/default has no manager Deployment")
	}
	var d appsv1.Deployment
	b, _ := o.MarshalJSON()
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec
	if spec.ServiceAccountName != "exagent-manager" {
		t.Errorf("serviceAccountName = %q", spec.ServiceAccountName)
	}
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil {
		t.Errorf("pod securityContext must run as non-root with a seccomp profile: %+v", sc)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]
	// A release's tag (test/chart checks it is the chart's appVersion), never latest.
	if !strings.HasPrefix(c.Image, "ghcr.io/exagent-io/exagent:v") {
		t.Errorf("image = %q, want ghcr.io/exagent-io/exagent:vX.Y.Z", c.Image)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--leader-elect", "--webhook-cert-dir=", "--webhook-port=9443", "--metrics-bind-address=", "--health-probe-bind-address="} {
		if !strings.Contains(args, want) {
			t.Errorf("manager args %q lack %s", args, want)
		}
	}
	podNamespace := false
	for _, e := range c.Env {
		podNamespace = podNamespace || (e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace")
	}
	if !podNamespace {
		t.Error("the manager needs POD_NAMESPACE from the downward API (decision signing Secret)")
	}
	if c.LivenessProbe == nil || c.ReadinessProbe == nil {
		t.Error("the manager needs liveness and readiness probes")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("the manager needs cpu/memory requests and a memory limit: %+v", c.Resources)
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || len(sc.Capabilities.Drop) == 0 {
		t.Errorf("container securityContext must drop privileges: %+v", sc)
	}
}

// TestManagerIsStatic: the image is distroless/static, so the manager must
// be a static binary (CGO off): no ELF interpreter, no dynamic section.
func TestManagerIsStatic(t *testing.T) {
	f, err := elf.Open(filepath.Join(s.bin, "manager"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("bin/manager has a %s program header: not static", p.Type)
		}
	}
	dockerfile, err := os.ReadFile(filepath.Join(s.root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/manager", "FROM gcr.io/distroless/static", "USER 65532:65532"} {
		if !bytes.Contains(dockerfile, []byte(want)) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

// TestDockerContextHoldsTheManager: no Docker engine here, so check what a
// build would see: no package cmd/manager needs is left out by .dockerignore
// (its folder patterns), and go.mod/go.sum are in.
func TestDockerContextHoldsTheManager(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(s.root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var folders []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if l == "go.mod" || l == "go.sum" || l == "*" {
			t.Errorf(".dockerignore leaves out %s", l)
		}
		if strings.HasSuffix(l, "/") && !strings.ContainsAny(l, "*?[") {
			folders = append(folders, l)
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "./cmd/manager")
	cmd.Dir = s.root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(s.root, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a module dependency, downloaded in the image
		}
		for _, f := range folders {
			if strings.HasPrefix(rel+"/", f) {
				t.Errorf("the manager needs %s, which .dockerignore's %q leaves out of the build context", rel, f)
			}
		}
	}
}
