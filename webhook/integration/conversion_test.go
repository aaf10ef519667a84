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

package integration_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1alpha1 "github.com/exagent-io/exagent/api/v1alpha1"
	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// warnings collects the apiserver's Warning headers.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.seen, "\n")
}

// TestConversionThroughTheAPIServer: a run created in v1alpha1 is stored
// as v1beta1, converted by the manager's /convert as the apiserver calls
// it over TLS; a v1alpha1 and a v1beta1 client read the same run, spec and
// journal alike; a watch in each version sees the same change in its own
// version; every v1alpha1 request is answered with the deprecation warning.
func TestConversionThroughTheAPIServer(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	createAgent(t, ns, "payments")

	crdScheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(crdScheme); err != nil {
		t.Fatal(err)
	}
	crds, err := client.New(env.Config, client.Options{Scheme: crdScheme})
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := crds.Get(ctx, types.NamespacedName{Name: "agentruns.exagent.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil ||
		c.Webhook.ClientConfig == nil || c.Webhook.ClientConfig.URL == nil || !strings.HasSuffix(*c.Webhook.ClientConfig.URL, "/convert") {
		t.Fatalf("the AgentRun CRD's conversion is %+v, want the webhook's /convert", c)
	}

	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	old, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	watchIn := func(version string) watch.Interface {
		gvr := schema.GroupVersionResource{Group: "exagent.io", Version: version, Resource: "agentruns"}
		wi, err := dyn.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=legacy"})
		if err != nil {
			t.Fatalf("watching agentruns in %s: %v", version, err)
		}
		t.Cleanup(wi.Stop)
		return wi
	}
	alphaWatch, betaWatch := watchIn("v1alpha1"), watchIn("v1beta1")

	// Created as v1alpha1, as a manifest written for v0.3.0 is applied.
	in := &exagentv1alpha1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns, Labels: map[string]string{"team": "a"}},
		Spec:       exagentv1alpha1.AgentRunSpec{AgentRef: exagentv1alpha1.LocalObjectReference{Name: "payments"}, Input: "pay invoice 42", ApprovalTimeout: "2h"},
	}
	if err := old.Create(ctx, in); err != nil {
		t.Fatalf("creating a v1alpha1 AgentRun: %v", err)
	}
	if !strings.Contains(w.all(), "exagent.io/v1alpha1 AgentRun is deprecated; use exagent.io/v1beta1 AgentRun") {
		t.Errorf("no deprecation warning; warnings: %q", w.all())
	}

	// The journal, written in v1beta1 as the manager writes it.
	run := &exagentv1.AgentRun{}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(in), run); err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	run.Status = exagentv1.AgentRunStatus{
		Phase: exagentv1.PhaseAwaitingApproval, Revision: 1, FormatVersion: exagentv1.JournalFormat,
		Cursor: exagentv1.Cursor{Step: 1, Stage: exagentv1.StageBatch},
		Calls: []exagentv1.ToolCall{{
			ID: "c1", Tool: "pay", Args: `{"amount":500}`, PayloadHash: payloadHash, State: exagentv1.CallPending,
		}},
		Approvals: []exagentv1.Approval{{
			ID: "a1", CallID: "c1", PayloadHash: payloadHash, Revision: 1, State: exagentv1.ApprovalPending, RequestedAt: now,
		}},
		PendingApprovals: 1,
	}
	if err := admin.Status().Update(ctx, run); err != nil {
		t.Fatalf("writing the journal: %v", err)
	}

	// Both versions read the same run.
	beta := &exagentv1.AgentRun{}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(in), beta); err != nil {
		t.Fatal(err)
	}
	alpha := &exagentv1alpha1.AgentRun{}
	if err := old.Get(ctx, client.ObjectKeyFromObject(in), alpha); err != nil {
		t.Fatalf("reading the run as v1alpha1: %v", err)
	}
	back := &exagentv1.AgentRun{}
	if err := alpha.ConvertTo(back); err != nil {
		t.Fatal(err)
	}
	back.TypeMeta = beta.TypeMeta
	if diff := cmp.Diff(beta, back); diff != "" {
		t.Errorf("the run read as v1alpha1 differs from the run read as v1beta1 (-v1beta1 +v1alpha1):\n%s", diff)
	}
	if alpha.Spec.Input != "pay invoice 42" || alpha.Status.FormatVersion != exagentv1.JournalFormat || len(alpha.Status.Approvals) != 1 {
		t.Errorf("v1alpha1 read %+v", alpha)
	}

	// A change, seen by the watch of each version in that version.
	alpha.Labels["team"] = "b"
	if err := old.Update(ctx, alpha); err != nil {
		t.Fatalf("updating the run as v1alpha1: %v", err)
	}
	for version, wi := range map[string]watch.Interface{"v1alpha1": alphaWatch, "v1beta1": betaWatch} {
		deadline := time.After(time.Minute)
		for seen := false; !seen; {
			select {
			case ev := <-wi.ResultChan():
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				if u.GetAPIVersion() != "exagent.io/"+version {
					t.Errorf("the %s watch delivered %s", version, u.GetAPIVersion())
				}
				if ev.Type == watch.Modified && u.GetLabels()["team"] == "b" {
					seen = true
				}
			case <-deadline:
				t.Fatalf("the %s watch saw no change of the label", version)
			}
		}
	}
}
