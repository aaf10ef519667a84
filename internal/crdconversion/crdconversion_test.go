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

package crdconversion

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/certs"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// control runs kube-controller-manager with LocalControllers, the storage
// version migrator among them, as a cluster does.
var control = &testenv.Lazy{Options: testenv.Options{GarbageCollector: true}}

func TestMain(m *testing.M) { control.Main(m) }

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crdconv-"}}
	if err := control.Get().Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// crdClient reads and patches CRDs and StorageVersionMigrations.
func crdClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := storagemigrationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(control.Get().Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func getCRD(t *testing.T, c client.Client, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(context.Background(), types.NamespacedName{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// TestKeeperPointsEveryCRDAtTheService: Sync sets each CRD's conversion to
// the Service's /convert with the CA read from the file, leaves a CRD that
// already has it alone (no write: its resourceVersion stays), and refuses
// a file with no certificate.
func TestKeeperPointsEveryCRDAtTheService(t *testing.T) {
	c := crdClient(t)
	dir := t.TempDir()
	caPEM, err := certs.GenerateServing(dir, []string{"exagent-webhook-service.exagent-system.svc"})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(file, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range CRDs {
		keepConversion(t, c, name)
	}
	k := &Keeper{Client: c, Service: types.NamespacedName{Namespace: "exagent-system", Name: "exagent-webhook-service"},
		Path: "/convert", CAFile: file, Log: testr.New(t)}
	if err := k.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := k.conversion(caPEM)
	versions := map[string]string{}
	for _, name := range CRDs {
		crd := getCRD(t, c, name)
		if !apiequality.Semantic.DeepEqual(crd.Spec.Conversion, want) {
			got, _ := json.Marshal(crd.Spec.Conversion)
			t.Errorf("CRD %s conversion %s", name, got)
		}
		if p := crd.Spec.Conversion.Webhook.ClientConfig.Service.Port; p == nil || *p != 443 {
			t.Errorf("CRD %s: service port %v, want 443", name, p)
		}
		versions[name] = crd.ResourceVersion
	}
	if err := k.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, name := range CRDs {
		if rv := getCRD(t, c, name).ResourceVersion; rv != versions[name] {
			t.Errorf("CRD %s written again though its conversion was current (%s → %s)", name, versions[name], rv)
		}
	}
	if err := os.WriteFile(file, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := k.Sync(t.Context()); err == nil {
		t.Error("Sync took a CA file with no certificate")
	}
}

// TestMigrateThroughAStorageVersionMigration: a CRD whose storedVersions
// still names v1alpha1 gets one StorageVersionMigration, which
// kube-controller-manager carries out; then storedVersions is pruned to
// v1beta1 and Migrate reports it done.
func TestMigrateThroughAStorageVersionMigration(t *testing.T) {
	c := crdClient(t)
	ctx := t.Context()
	ns := newNamespace(t)
	for _, name := range []string{"a", "b"} {
		if err := control.Get().Client.Create(ctx, fixture.MakeAgent(name, ns).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	const name = "agents.exagent.io"
	crd := getCRD(t, c, name)
	patch := []byte(`{"status":{"storedVersions":["v1alpha1","v1beta1"]}}`)
	if err := c.Status().Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	m := &Migrator{Client: c, Log: testr.New(t)}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		done, err := m.Migrate(ctx, name)
		if err != nil {
			t.Logf("migrating: %v", err)
		}
		return done, nil
	})
	if err != nil {
		t.Fatalf("the migration did not finish: %v", err)
	}
	if got := getCRD(t, c, name).Status.StoredVersions; len(got) != 1 || got[0] != exagentv1.GroupVersion.Version {
		t.Errorf("storedVersions %v, want [v1beta1]", got)
	}
	svm := &storagemigrationv1.StorageVersionMigration{}
	if err := c.Get(ctx, types.NamespacedName{Name: MigrationName(crd, "v1beta1")}, svm); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(svm.Status.Conditions, string(storagemigrationv1.MigrationSucceeded)) {
		t.Errorf("StorageVersionMigration %s: conditions %+v", svm.Name, svm.Status.Conditions)
	}
	if done, err := m.Migrate(ctx, name); !done || err != nil {
		t.Errorf("a migrated CRD: done %v, error %v", done, err)
	}
}

// TestRewriteWritesEveryObjectOnce: where the cluster has no
// storagemigration API the manager writes each object back as read (its
// status, or an empty patch for a kind without one), fenced by its
// resourceVersion, so the apiserver stores it again in the storage version.
func TestRewriteWritesEveryObjectOnce(t *testing.T) {
	c := crdClient(t)
	ctx := t.Context()
	kc := control.Get().Client
	ns := newNamespace(t)
	// Stored as v0.3.0 stored them: v1alpha1 the storage version while
	// they are written, v1beta1 again after; converted with strategy None
	// here (no webhook server; the versions share one schema).
	for _, name := range []string{"agents.exagent.io", "agentrunsegments.exagent.io"} {
		keepConversion(t, c, name)
		setConversion(t, c, name, &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter})
	}
	storeAs(t, c, "agents.exagent.io", "v1alpha1")
	storeAs(t, c, "agentrunsegments.exagent.io", "v1alpha1")
	if err := kc.Create(ctx, fixture.MakeAgent("a", ns).Obj()); err != nil {
		t.Fatal(err)
	}
	seg := &exagentv1.AgentRunSegment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"},
		Spec: exagentv1.AgentRunSegmentSpec{RunName: "r", RunUID: "u", Index: 0, Messages: []exagentv1.Message{{Role: "user", Content: "hi"}}}}
	if err := kc.Create(ctx, seg); err != nil {
		t.Fatal(err)
	}
	storeAs(t, c, "agents.exagent.io", "v1beta1")
	storeAs(t, c, "agentrunsegments.exagent.io", "v1beta1")
	agent, segment := &exagentv1.Agent{}, &exagentv1.AgentRunSegment{}
	_ = kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a"}, agent)
	_ = kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "s"}, segment)
	m := &Migrator{Client: c, Rate: 1000, Log: testr.New(t)}
	for _, name := range []string{"agents.exagent.io", "agentrunsegments.exagent.io"} {
		if err := m.rewrite(ctx, getCRD(t, c, name), "v1beta1"); err != nil {
			t.Fatalf("rewriting %s: %v", name, err)
		}
	}
	for _, o := range []client.Object{agent, segment} {
		before := o.GetResourceVersion()
		if err := kc.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		if o.GetResourceVersion() == before {
			t.Errorf("%T %s was not written again", o, o.GetName())
		}
	}
}

// storeAs makes version the storage version of CRD name.
func storeAs(t *testing.T, c client.Client, name, version string) {
	t.Helper()
	crd := getCRD(t, c, name)
	var ops []map[string]any
	for i, v := range crd.Spec.Versions {
		ops = append(ops, map[string]any{"op": "replace", "path": fmt.Sprintf("/spec/versions/%d/storage", i), "value": v.Name == version})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(t.Context(), crd, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		t.Fatalf("storing %s as %s: %v", name, version, err)
	}
	// The apiserver serves the new storage version once the CRD is
	// Established again with it.
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		got := getCRD(t, c, name)
		return StorageVersion(got) == version && slices.Contains(got.Status.StoredVersions, version), nil
	})
	if err != nil {
		t.Fatalf("%s never stored %s", name, version)
	}
}

// keepConversion puts CRD name's conversion back as it is now when the
// test ends.
func keepConversion(t *testing.T, c client.Client, name string) {
	t.Helper()
	was := getCRD(t, c, name).Spec.Conversion
	t.Cleanup(func() { setConversion(t, c, name, was) })
}

// setConversion replaces CRD name's spec.conversion.
func setConversion(t *testing.T, c client.Client, name string, conv *apiextensionsv1.CustomResourceConversion) {
	t.Helper()
	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/conversion", "value": conv}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(context.Background(), getCRD(t, c, name), client.RawPatch(types.JSONPatchType, patch)); err != nil {
		t.Fatalf("setting the conversion of %s: %v", name, err)
	}
}

// TestTheOldCRDIsRefused: once v1beta1 is a stored version, a CRD that
// serves only v1alpha1 — v0.3.0's — cannot be applied over the new one
// (docs/upgrading.md, "Rolling back").
func TestTheOldCRDIsRefused(t *testing.T) {
	c := crdClient(t)
	crd := getCRD(t, c, "agentbudgets.exagent.io")
	if !slices.Contains(crd.Status.StoredVersions, "v1beta1") {
		t.Fatalf("storedVersions %v lack v1beta1", crd.Status.StoredVersions)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1alpha1" {
			v.Storage, v.Deprecated, v.DeprecationWarning = true, false, nil
			crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{v}
		}
	}
	err := c.Update(t.Context(), crd)
	if err == nil || !strings.Contains(err.Error(), "storedVersions") {
		t.Fatalf("applying v0.3.0's CRD over the new one: %v; want refused for its stored versions", err)
	}
	t.Logf("refused: %v", err)
}
