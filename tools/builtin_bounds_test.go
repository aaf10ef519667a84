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

package tools_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/tools"
)

// TestBuiltinSecretsRefused: a builtin tool touches Secrets only with
// allowSecrets. The Agents here reach the tool without the webhook (as an
// Agent admitted before the webhook refused Secrets would), and the
// ServiceAccount may read and write Secrets: the refusal is the tool's,
// on the resolved resource, however the kind is spelled.
func TestBuiltinSecretsRefused(t *testing.T) {
	ctx := t.Context()
	reg := newRegistry(t)
	f := newBuiltinFixture(t)
	const value = "hunter2-do-not-leak"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: f.ns}, StringData: map[string]string{"password": value}}
	if err := env().Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	grant(t, f.ns, "agent", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "patch", "delete"}},
		authorizationv1.ResourceAttributes{Namespace: f.ns, Verb: "get", Resource: "secrets"})
	encoded := base64.StdEncoding.EncodeToString([]byte(value))

	tool := func(op exagentv1.BuiltinOperation, allow bool, kinds ...string) *exagentv1.ToolSpec {
		return &exagentv1.ToolSpec{Name: "t", Builtin: &exagentv1.BuiltinTool{Operation: op, Kinds: kinds, AllowSecrets: allow}}
	}
	cases := map[string]struct {
		spec     *exagentv1.ToolSpec
		args     string
		wantKind loop.ResultKind
		wantOut  string
	}{
		"get":                           {spec: tool(exagentv1.BuiltinGet, false, "Secret"), args: `{"name":"db"}`, wantKind: loop.ResultFailed, wantOut: "may not touch Secrets"},
		"get naming the kind":           {spec: tool(exagentv1.BuiltinGet, false, "ConfigMap", "Secret"), args: `{"kind":"Secret","name":"db"}`, wantKind: loop.ResultFailed, wantOut: "may not touch Secrets"},
		"get with the kind's group":     {spec: tool(exagentv1.BuiltinGet, false, "Secret"), args: `{"kind":"Secret.","name":"db"}`, wantKind: loop.ResultFailed, wantOut: "may not touch Secrets"},
		"list":                          {spec: tool(exagentv1.BuiltinList, false, "Secret"), args: `{}`, wantKind: loop.ResultFailed, wantOut: "may not touch Secrets"},
		"patch":                         {spec: tool(exagentv1.BuiltinPatch, false, "Secret"), args: `{"name":"db","patch":{"stringData":{"password":"x"}}}`, wantKind: loop.ResultFailed, wantOut: "may not touch Secrets"},
		"delete":                        {spec: tool(exagentv1.BuiltinDelete, false, "Secret"), args: `{"name":"db"}`, wantKind: loop.ResultFailed, wantOut: "may not touch Secrets"},
		"a ConfigMap tool is unchanged": {spec: tool(exagentv1.BuiltinGet, false, "ConfigMap", "Secret"), args: `{"kind":"ConfigMap","name":"a"}`, wantKind: loop.ResultSucceeded, wantOut: `"colour":"red"`},
		"get with allowSecrets":         {spec: tool(exagentv1.BuiltinGet, true, "Secret"), args: `{"name":"db"}`, wantKind: loop.ResultSucceeded, wantOut: encoded},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			call := tools.Call{ToolInvocation: loop.ToolInvocation{CallID: "c", Args: json.RawMessage(tc.args), IdempotencyKey: "uid/c", Attempt: 1},
				RunNamespace: f.ns, RunName: "run", RunUID: "uid", ServiceAccount: "agent"}
			got := reg.Invoke(ctx, tc.spec, call)
			if got.Kind != tc.wantKind || !strings.Contains(got.Output, tc.wantOut) {
				t.Errorf("result = %s %q, want %s containing %q", got.Kind, got.Output, tc.wantKind, tc.wantOut)
			}
			if !tc.spec.Builtin.AllowSecrets && strings.Contains(got.Output, encoded) {
				t.Errorf("the Secret's data reached the result: %q", got.Output)
			}
		})
	}
	after := &corev1.Secret{}
	if err := env().Client.Get(ctx, client.ObjectKeyFromObject(secret), after); err != nil || string(after.Data["password"]) != value {
		t.Errorf("the Secret changed (or is gone: %v) although every write was refused", err)
	}
}

// TestBuiltinListBounded: a List reads pages of metadata (a Limit on every
// request, never the objects, never the whole collection at once) and a
// List that finds more than MaxListItems fails, saying how to narrow it.
// The collection is real: 2,000 ConfigMaps in the apiserver.
func TestBuiltinListBounded(t *testing.T) {
	ctx := t.Context()
	f := newBuiltinFixture(t)
	const total, labelled = 2000, 150
	createConfigMaps(t, f.ns, total, labelled)

	rec := &listRecorder{}
	cfg := rest.CopyConfig(env().Config)
	cfg.Wrap(rec.wrap)
	b := tools.NewBuiltins(cfg, newMapper(t, env().Config))
	b.MaxListItems, b.ListPageSize = 500, 100
	reg := &tools.Registry{Builtins: b}
	spec := &exagentv1.ToolSpec{Name: "list", Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinList, Kinds: []string{"ConfigMap"}}}
	list := func(args string) loop.ToolResult {
		return reg.Invoke(ctx, spec, tools.Call{ToolInvocation: loop.ToolInvocation{CallID: "c", Args: json.RawMessage(args)},
			RunNamespace: f.ns, RunName: "run", ServiceAccount: "agent"})
	}

	got := list(`{}`)
	if got.Kind != loop.ResultFailed || !strings.Contains(got.Output, "more than 500 ConfigMap objects match") || !strings.Contains(got.Output, "labelSelector") {
		t.Errorf("List of %d ConfigMaps with a bound of 500 = %s %q, want Failed naming the bound and labelSelector", total, got.Kind, got.Output)
	}
	reqs := rec.take()
	// Five full pages hold the 500 names; the sixth finds the 501st.
	if len(reqs) != 6 {
		t.Errorf("List sent %d requests, want 6 pages of 100: %v", len(reqs), reqs)
	}
	for _, r := range reqs {
		if r.limit != "100" {
			t.Errorf("a List request without the page Limit: %+v", r)
		}
		if !strings.Contains(r.accept, "as=PartialObjectMetadataList") {
			t.Errorf("a List request asked for whole objects, not metadata: Accept %q", r.accept)
		}
	}

	got = list(`{"labelSelector":"bulk=yes"}`)
	var out struct {
		Kind  string   `json:"kind"`
		Items []string `json:"items"`
	}
	if got.Kind != loop.ResultSucceeded || json.Unmarshal([]byte(got.Output), &out) != nil || len(out.Items) != labelled {
		t.Fatalf("List of the %d labelled ConfigMaps = %s %.200q, want Succeeded with %d names", labelled, got.Kind, got.Output, labelled)
	}
	if reqs := rec.take(); len(reqs) != 2 {
		t.Errorf("List of %d names sent %d requests, want 2 pages", labelled, len(reqs))
	}
}

// TestBuiltinResponseBounded: every answer a builtin reads is bounded; a
// Get of an object larger than the bound fails clearly (not "please
// retry"), and a smaller one is read as before.
func TestBuiltinResponseBounded(t *testing.T) {
	ctx := t.Context()
	f := newBuiltinFixture(t)
	big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: f.ns}, Data: map[string]string{"blob": strings.Repeat("x", 200<<10)}}
	if err := env().Client.Create(ctx, big); err != nil {
		t.Fatal(err)
	}
	b := tools.NewBuiltins(env().Config, newMapper(t, env().Config))
	b.MaxResponseBytes = 64 << 10
	reg := &tools.Registry{Builtins: b}
	spec := &exagentv1.ToolSpec{Name: "get", Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinGet, Kinds: []string{"ConfigMap"}}}
	get := func(name string) loop.ToolResult {
		return reg.Invoke(ctx, spec, tools.Call{ToolInvocation: loop.ToolInvocation{CallID: "c", Args: json.RawMessage(`{"name":"` + name + `"}`)},
			RunNamespace: f.ns, RunName: "run", ServiceAccount: "agent"})
	}
	if got := get("big"); got.Kind != loop.ResultFailed || !strings.Contains(got.Output, "larger than 65536 bytes") || strings.Contains(got.Output, "retry") {
		t.Errorf("Get of a 200 KiB ConfigMap with a 64 KiB bound = %s %.300q, want Failed naming the bound", got.Kind, got.Output)
	}
	if got := get("a"); got.Kind != loop.ResultSucceeded || !strings.Contains(got.Output, `"colour":"red"`) {
		t.Errorf("Get of a small ConfigMap = %s %q, want Succeeded", got.Kind, got.Output)
	}
}

// createConfigMaps creates n ConfigMaps in ns, the first labelled of them
// with bulk=yes, from a few goroutines.
func createConfigMaps(t *testing.T, ns string, n, labelled int) {
	t.Helper()
	idx := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range idx {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Namespace: ns}}
				if i < labelled {
					cm.Labels = map[string]string{"bulk": "yes"}
				}
				if err := env().Client.Create(t.Context(), cm); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		idx <- i
	}
	close(idx)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating ConfigMaps: %v", err)
	}
}

// grant gives ServiceAccount sa of ns rule (a Role and RoleBinding) and
// waits until a SubjectAccessReview for check allows it.
func grant(t *testing.T, ns, sa string, rule rbacv1.PolicyRule, check authorizationv1.ResourceAttributes) {
	t.Helper()
	ctx := t.Context()
	name := sa + "-extra"
	for _, o := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: []rbacv1.PolicyRule{rule}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}},
	} {
		if err := env().Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + ns + ":" + sa, Groups: []string{"system:serviceaccounts", "system:authenticated"}, ResourceAttributes: &check}}
		if err := env().Client.Create(ctx, sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s's grant: %v", sa, err)
	}
}

// listRecorder records the List requests (GETs of a collection) a client sends.
type listRecorder struct {
	mu   sync.Mutex
	reqs []listRequest
}

type listRequest struct{ path, limit, accept string }

func (r *listRecorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/configmaps") {
			r.mu.Lock()
			r.reqs = append(r.reqs, listRequest{path: req.URL.Path, limit: req.URL.Query().Get("limit"), accept: req.Header.Get("Accept")})
			r.mu.Unlock()
		}
		return next.RoundTrip(req)
	})
}

func (r *listRecorder) take() []listRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
