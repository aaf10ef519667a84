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
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/tools"
)

// fault is what the proxy does with one matching request.
type fault string

const (
	// Answered by the proxy; the request never reaches the apiserver.
	timeoutBefore  fault = "504 Timeout, not forwarded"
	forbidBefore   fault = "403 Forbidden, not forwarded"
	conflictBefore fault = "409 Conflict, not forwarded"
	dropBefore     fault = "connection closed, not forwarded"
	// Forwarded — the write lands — and then the answer is replaced or lost.
	serverTimeoutAfter fault = "forwarded, then 500 ServerTimeout with Retry-After"
	etcdTimeoutAfter   fault = "forwarded, then 500 etcdserver: request timed out"
	dropAfter          fault = "forwarded, then connection closed without an answer"
)

// faultProxy stands in front of envtest's apiserver on 127.0.0.1 and
// applies its faults, in order, to the requests match selects; every
// other request passes through. It forwards with the admin's credentials
// and the client's Impersonate-User header, so the apiserver acts as the
// impersonated ServiceAccount exactly as without the proxy.
type faultProxy struct {
	t      *testing.T
	target *url.URL
	rt     http.RoundTripper

	mu     sync.Mutex
	match  func(*http.Request) bool
	faults []fault
	// forwarded counts matching requests that reached the apiserver.
	forwarded int
	// afterFirst runs once, after the first matching request was forwarded
	// and before its answer is given (or lost).
	afterFirst func()
}

func newFaultProxy(t *testing.T, match func(*http.Request) bool, faults ...fault) (*faultProxy, *httptest.Server) {
	t.Helper()
	target, err := url.Parse(env().Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(env().Config)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, target: target, rt: rt, match: match, faults: faults}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	matched := p.match(r)
	var f fault
	if matched && len(p.faults) > 0 {
		f, p.faults = p.faults[0], p.faults[1:]
	}
	p.mu.Unlock()

	switch f {
	case timeoutBefore:
		writeStatus(w, apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0))
		return
	case forbidBefore:
		writeStatus(w, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("injected")))
		return
	case conflictBefore:
		writeStatus(w, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("injected")))
		return
	case dropBefore:
		hangUp(w)
		return
	}

	status, header, body, err := p.forward(r)
	if err != nil {
		p.t.Errorf("proxy: forwarding %s %s: %v", r.Method, r.URL.Path, err)
		hangUp(w)
		return
	}
	if matched {
		p.mu.Lock()
		p.forwarded++
		hook := p.afterFirst
		p.afterFirst = nil
		p.mu.Unlock()
		if hook != nil {
			hook()
		}
	}
	switch f {
	case serverTimeoutAfter:
		// The apiserver's own ServerTimeout carries Retry-After; client-go
		// would re-send any verb on it unless the tool stops it.
		w.Header().Set("Retry-After", "1")
		writeStatus(w, apierrors.NewServerTimeout(schema.GroupResource{Resource: "configmaps"}, "patch", 1))
	case etcdTimeoutAfter:
		writeStatus(w, apierrors.NewInternalError(errors.New("etcdserver: request timed out")))
	case dropAfter:
		hangUp(w)
	default:
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

func (p *faultProxy) forward(r *http.Request) (int, http.Header, []byte, error) {
	out := r.Clone(context.WithoutCancel(r.Context()))
	out.RequestURI = ""
	out.Host = ""
	out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
	out.Header.Del("Authorization")
	resp, err := p.rt.RoundTrip(out)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body, err
}

func (p *faultProxy) forwardedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forwarded
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	b, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(b)
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	_ = conn.Close()
}

// TestBuiltinFaults injects apiserver faults between the builtin tools and
// a real kube-apiserver, and checks the outcome each fault may honestly
// have: a write whose answer leaves it possibly applied is re-sent when
// idempotent and otherwise unknown; a clean refusal is a failed outcome;
// a read never has an effect. The proxy's count of writes that reached the
// apiserver and the objects left in it are the oracle.
func TestBuiltinFaults(t *testing.T) {
	ctx := t.Context()
	mapper := newMapper(t, env().Config)
	writes := func(r *http.Request) bool { return r.Method != http.MethodGet }
	readsOfConfigMaps := func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/configmaps")
	}
	tool := func(op exagentv1.BuiltinOperation, kind string) *exagentv1.ToolSpec {
		return &exagentv1.ToolSpec{Name: strings.ToLower(string(op)), Builtin: &exagentv1.BuiltinTool{Operation: op, Kinds: []string{kind}}}
	}
	scale := tool(exagentv1.BuiltinScale, "Deployment.apps")
	patch := tool(exagentv1.BuiltinPatch, "ConfigMap")
	apply := tool(exagentv1.BuiltinApply, "ConfigMap")
	del := tool(exagentv1.BuiltinDelete, "ConfigMap")
	get := tool(exagentv1.BuiltinGet, "ConfigMap")
	list := tool(exagentv1.BuiltinList, "ConfigMap")
	const (
		scaleArgs = `{"name":"web","replicas":3}`
		patchArgs = `{"name":"a","patch":{"data":{"colour":"green"}}}`
		applyArgs = `{"manifest":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"colour":"teal"}}}`
		delArgs   = `{"name":"a"}`
	)
	getCM := func(t *testing.T, f builtinFixture, name string) (*corev1.ConfigMap, bool) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		err := env().Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, cm)
		if apierrors.IsNotFound(err) {
			return nil, false
		}
		if err != nil {
			t.Fatalf("get ConfigMap %s: %v", name, err)
		}
		return cm, true
	}
	wantReplicas := func(n int32) func(t *testing.T, f builtinFixture) {
		return func(t *testing.T, f builtinFixture) {
			t.Helper()
			if got := replicasOf(t, f); got != n {
				t.Errorf("replicas = %d, want %d", got, n)
			}
		}
	}
	wantColour := func(name, colour string) func(t *testing.T, f builtinFixture) {
		return func(t *testing.T, f builtinFixture) {
			t.Helper()
			cm, ok := getCM(t, f, name)
			if !ok || cm.Data["colour"] != colour {
				t.Errorf("ConfigMap %s = %v (exists %v), want colour %s", name, cm, ok, colour)
			}
		}
	}
	wantGone := func(t *testing.T, f builtinFixture) {
		t.Helper()
		if _, ok := getCM(t, f, "a"); ok {
			t.Error("ConfigMap a still exists")
		}
	}

	tests := map[string]struct {
		sa      string // default "agent"
		spec    *exagentv1.ToolSpec
		args    string
		match   func(*http.Request) bool // default writes
		faults  []fault
		refused bool // the tools talk to a port where nothing listens
		// between runs after the first matching request reached the
		// apiserver, before its answer.
		between  func(t *testing.T, f builtinFixture)
		wantKind loop.ResultKind
		wantOut  string
		// wantWrites is how many matching requests reached the apiserver.
		wantWrites int
		check      func(t *testing.T, f builtinFixture)
	}{
		// Idempotent writes: a lost answer is re-sent, bounded.
		"scale: answer lost after the write landed is re-sent": {
			spec: scale, args: scaleArgs, faults: []fault{dropAfter},
			wantKind: loop.ResultSucceeded, wantOut: "sent 2 times", wantWrites: 2,
			check: wantReplicas(3),
		},
		"scale: ServerTimeout after the write landed is re-sent once, by the tool alone": {
			spec: scale, args: scaleArgs, faults: []fault{serverTimeoutAfter},
			wantKind: loop.ResultSucceeded, wantOut: "sent 2 times", wantWrites: 2,
			check: wantReplicas(3),
		},
		"scale: 504 to every try is unknown after the bounded re-sends": {
			spec: scale, args: scaleArgs, faults: []fault{timeoutBefore, timeoutBefore, timeoutBefore, timeoutBefore},
			wantKind: loop.ResultUnknown, wantOut: "outcome unknown after 3 sends", wantWrites: 0,
			check: wantReplicas(1),
		},
		"scale: connection closed before the apiserver is re-sent": {
			spec: scale, args: scaleArgs, faults: []fault{dropBefore},
			wantKind: loop.ResultSucceeded, wantOut: "scaled Deployment/web to 3 replicas", wantWrites: 1,
			check: wantReplicas(3),
		},
		"scale: a re-send refused after a lost answer stays unknown": {
			spec: scale, args: scaleArgs, faults: []fault{dropAfter, forbidBefore},
			wantKind: loop.ResultUnknown, wantOut: "a re-send was refused", wantWrites: 1,
			check: wantReplicas(3),
		},
		"patch: etcd timeout after the write landed is re-sent": {
			spec: patch, args: patchArgs, faults: []fault{etcdTimeoutAfter},
			wantKind: loop.ResultSucceeded, wantOut: "patched ConfigMap/a", wantWrites: 2,
			check: wantColour("a", "green"),
		},
		"apply: answer lost after the write landed is re-sent": {
			spec: apply, args: applyArgs, faults: []fault{dropAfter},
			wantKind: loop.ResultSucceeded, wantOut: "applied ConfigMap/b", wantWrites: 2,
			check: wantColour("b", "teal"),
		},
		"delete: answer lost, the UID-fenced re-send finds the object gone": {
			spec: del, args: delArgs, faults: []fault{dropAfter},
			wantKind: loop.ResultSucceeded, wantOut: "found the object gone", wantWrites: 2,
			check: wantGone,
		},
		"delete: answer lost and the name re-created before the re-send, which spares the new object": {
			spec: del, args: delArgs, faults: []fault{dropAfter},
			between: func(t *testing.T, f builtinFixture) {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: f.ns}, Data: map[string]string{"colour": "new"}}
				if err := env().Client.Create(context.Background(), cm); err != nil {
					t.Errorf("re-creating ConfigMap a: %v", err)
				}
			},
			wantKind: loop.ResultSucceeded, wantOut: "found the object gone", wantWrites: 2,
			check: wantColour("a", "new"),
		},

		// A delete the ServiceAccount may not read first has no UID fence:
		// not idempotent, so a possibly applied try is unknown, never re-sent.
		"unfenced delete: answer lost is unknown": {
			sa: "deleter", spec: del, args: delArgs, faults: []fault{dropAfter},
			wantKind: loop.ResultUnknown, wantOut: "outcome unknown", wantWrites: 1,
			check: wantGone,
		},
		"unfenced delete: ServerTimeout with Retry-After is unknown and not re-sent by client-go": {
			sa: "deleter", spec: del, args: delArgs, faults: []fault{serverTimeoutAfter},
			wantKind: loop.ResultUnknown, wantOut: "could not be completed at this time", wantWrites: 1,
			check: wantGone,
		},
		"unfenced delete: 504 is unknown even when nothing landed": {
			sa: "deleter", spec: del, args: delArgs, faults: []fault{timeoutBefore},
			wantKind: loop.ResultUnknown, wantOut: "outcome unknown", wantWrites: 0,
			check: wantColour("a", "red"),
		},
		"unfenced delete: connection closed before the apiserver is unknown": {
			sa: "deleter", spec: del, args: delArgs, faults: []fault{dropBefore},
			wantKind: loop.ResultUnknown, wantOut: "outcome unknown", wantWrites: 0,
			check: wantColour("a", "red"),
		},
		"unfenced delete without faults": {
			sa: "deleter", spec: del, args: delArgs,
			wantKind: loop.ResultSucceeded, wantOut: "deleted ConfigMap/a", wantWrites: 1,
			check: wantGone,
		},

		// Clean failures: the apiserver refused, or nothing was sent.
		"scale: 403 is a failed outcome, not re-sent": {
			spec: scale, args: scaleArgs, faults: []fault{forbidBefore},
			wantKind: loop.ResultFailed, wantOut: "forbidden", wantWrites: 0,
			check: wantReplicas(1),
		},
		"patch: 409 is a failed outcome, not re-sent": {
			spec: patch, args: patchArgs, faults: []fault{conflictBefore},
			wantKind: loop.ResultFailed, wantOut: "cannot be fulfilled", wantWrites: 0,
			check: wantColour("a", "red"),
		},
		"delete: 403 is a failed outcome": {
			spec: del, args: delArgs, faults: []fault{forbidBefore},
			wantKind: loop.ResultFailed, wantOut: "forbidden", wantWrites: 0,
			check: wantColour("a", "red"),
		},
		"scale: connection refused is a failed outcome": {
			spec: scale, args: scaleArgs, refused: true,
			wantKind: loop.ResultFailed, wantOut: "connection refused", wantWrites: 0,
			check: wantReplicas(1),
		},

		// Reads have no effect: every failure is a failed outcome.
		"get: 504 is a failed outcome": {
			spec: get, args: delArgs, match: readsOfConfigMaps, faults: []fault{timeoutBefore},
			wantKind: loop.ResultFailed, wantOut: "timeout", wantWrites: 0,
		},
		"list: etcd timeout is a failed outcome": {
			spec: list, args: `{}`, match: readsOfConfigMaps, faults: []fault{etcdTimeoutAfter},
			wantKind: loop.ResultFailed, wantOut: "etcdserver: request timed out", wantWrites: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newBuiltinFixture(t)
			grantDeleteOnly(t, f)
			match := tc.match
			if match == nil {
				match = writes
			}
			proxy, srv := newFaultProxy(t, match, tc.faults...)
			host := srv.URL
			if tc.refused {
				host = closedPort(t)
			}
			if tc.between != nil {
				proxy.afterFirst = func() { tc.between(t, f) }
			}
			b := tools.NewBuiltins(&rest.Config{Host: host}, mapper)
			b.Backoff, b.MaxBackoff = 10*time.Millisecond, 50*time.Millisecond
			reg := &tools.Registry{Builtins: b}
			sa := tc.sa
			if sa == "" {
				sa = "agent"
			}
			before := f.versions(t)
			call := tools.Call{
				ToolInvocation: loop.ToolInvocation{CallID: "call-1", Tool: tc.spec.Name, Args: json.RawMessage(tc.args), IdempotencyKey: "uid/call-1", Attempt: 1},
				RunNamespace:   f.ns, RunName: "run", RunUID: "uid", ServiceAccount: sa,
			}
			got := reg.Invoke(ctx, tc.spec, call)
			if got.Kind != tc.wantKind || !strings.Contains(strings.ToLower(got.Output), strings.ToLower(tc.wantOut)) {
				t.Errorf("result = %s %q, want %s containing %q", got.Kind, got.Output, tc.wantKind, tc.wantOut)
			}
			if n := proxy.forwardedCount(); n != tc.wantWrites {
				t.Errorf("%d matching requests reached the apiserver, want %d", n, tc.wantWrites)
			}
			if tc.check != nil {
				tc.check(t, f)
				return
			}
			if after := f.versions(t); !equalMaps(before, after) {
				t.Errorf("fixture changed: before %v, after %v", before, after)
			}
		})
	}
}

func replicasOf(t *testing.T, f builtinFixture) int32 {
	t.Helper()
	d := deployment(f.ns, "web")
	if err := env().Client.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "web"}, d); err != nil {
		t.Fatalf("get Deployment web: %v", err)
	}
	return *d.Spec.Replicas
}

// grantDeleteOnly adds the ServiceAccount "deleter", which may delete
// ConfigMaps but not read them, and waits until its binding is in effect.
func grantDeleteOnly(t *testing.T, f builtinFixture) {
	t.Helper()
	ctx := t.Context()
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deleter", Namespace: f.ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deleter", Namespace: f.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"delete"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deleter", Namespace: f.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "deleter"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deleter", Namespace: f.ns}}},
	} {
		if err := env().Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + f.ns + ":deleter",
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + f.ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: f.ns, Verb: "delete", Resource: "configmaps"},
		}}
		if err := env().Client.Create(ctx, sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("waiting for the deleter's RBAC: %v", err)
	}
}

// closedPort returns the URL of a loopback port where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr
}
