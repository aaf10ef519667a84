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
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// TestChartWebhookClientCA: webhook.clientCA becomes a ConfigMap mounted
// where --webhook-client-ca reads it, with a checksum that rolls the pods
// when it changes (the manager reads it once); without it none of that is
// rendered (the default stays config/default: TestChartMatchesKustomize).
func TestChartWebhookClientCA(t *testing.T) {
	wc, err := testenv.NewWebhookClient(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(wc.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	const arg = "--webhook-client-ca=/etc/exagent/webhook-client-ca/ca.crt"

	objs := byKey(render(t, map[string]any{"webhook": map[string]any{"clientCA": string(ca)}}))
	cm := objs["ConfigMap/exagent-system/exagent-webhook-client-ca"]
	if cm == nil {
		t.Fatal("no ConfigMap exagent-webhook-client-ca")
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "ca.crt"); strings.TrimSpace(got) != strings.TrimSpace(string(ca)) {
		t.Errorf("ConfigMap ca.crt = %q, want the given PEM", got)
	}
	if args := managerArgs(t, objs); !slices.Contains(args, arg) {
		t.Errorf("args %q lack %s", args, arg)
	}
	mounts, _, _ := unstructured.NestedSlice(container(t, objs), "volumeMounts")
	if !slices.ContainsFunc(mounts, func(m any) bool {
		mm := m.(map[string]any)
		return mm["name"] == "webhook-client-ca" && mm["mountPath"] == "/etc/exagent/webhook-client-ca"
	}) {
		t.Errorf("volumeMounts %v lack the client CA", mounts)
	}
	d := objs["Deployment/exagent-system/exagent-manager"]
	volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	if !slices.ContainsFunc(volumes, func(v any) bool {
		name, _, _ := unstructured.NestedString(v.(map[string]any), "configMap", "name")
		return name == "exagent-webhook-client-ca"
	}) {
		t.Errorf("volumes %v lack ConfigMap exagent-webhook-client-ca", volumes)
	}
	annotations, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "annotations")
	if annotations["checksum/webhook-client-ca"] == "" {
		t.Errorf("pod annotations %v lack the CA's checksum", annotations)
	}

	plain := byKey(render(t, nil))
	mustLack(t, plain, "ConfigMap/exagent-system/exagent-webhook-client-ca")
	if args := managerArgs(t, plain); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--webhook-client-ca") }) {
		t.Errorf("default args %q ask for a client CA", args)
	}
}
