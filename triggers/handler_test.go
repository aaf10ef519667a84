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

package triggers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/exagent-io/exagent/internal/trigger"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var t0 = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

type lookup map[types.NamespacedName]*Trigger

func (l lookup) Trigger(_ context.Context, key types.NamespacedName) (*Trigger, error) {
	if t, ok := l[key]; ok {
		return t, nil
	}
	return nil, ErrNotFound
}

// runs is a Creator that names runs as the manager's does — from the
// trigger, the key and its window — and can be made to fail.
type runs struct {
	mu   sync.Mutex
	made map[string]string // name → input
	fail bool
	// taken names are runs someone else made.
	taken map[string]bool
}

func (r *runs) CreateRun(_ context.Context, t *Trigger, input, key string, at time.Time) (string, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return "", false, errors.New("the apiserver is away")
	}
	name := fmt.Sprintf("%s-%s-%d", t.Name, key, at.Truncate(t.DedupWindow).Unix())
	if r.taken[name] {
		return "", false, fmt.Errorf("%w: run %s is not the trigger's", ErrNameTaken, name)
	}
	if _, ok := r.made[name]; ok {
		return name, false, nil
	}
	r.made[name] = input
	return name, true, nil
}

func (r *runs) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.made)
}

func mustCompile(t *testing.T, src string) *trigger.Expr {
	t.Helper()
	e, err := trigger.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type fixture struct {
	srv  *httptest.Server
	runs *runs
	clk  *clocktesting.FakeClock
}

func newFixture(t *testing.T, triggers ...*Trigger) *fixture {
	f := &fixture{runs: &runs{made: map[string]string{}}, clk: clocktesting.NewFakeClock(t0)}
	l := lookup{}
	for _, tr := range triggers {
		l[tr.NamespacedName] = tr
	}
	f.srv = httptest.NewServer(&Handler{Lookup: l, Creator: f.runs, Clock: f.clk})
	t.Cleanup(f.srv.Close)
	return f
}

// post sends body to the trigger with headers; it returns the status and the decoded result.
func (f *fixture) post(t *testing.T, path string, body []byte, h http.Header) (int, Result) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, bytes.NewReader(body))
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var res Result
	_ = json.Unmarshal(b, &res)
	return resp.StatusCode, res
}

func sign(t *testing.T, key, id string, at time.Time, body []byte) http.Header {
	t.Helper()
	wh, _ := standardwebhooks.NewWebhook(key)
	sig, err := wh.Sign(id, at, body)
	if err != nil {
		t.Fatal(err)
	}
	return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {strconv.FormatInt(at.Unix(), 10)}, "Webhook-Signature": {sig}}
}

func webhookTrigger(t *testing.T) *Trigger {
	return &Trigger{NamespacedName: types.NamespacedName{Namespace: "ops", Name: "tickets"}, Generation: 1, Kind: Webhook,
		SigningSecret: secret, MaxBody: 1024, DedupWindow: 10 * time.Minute,
		Input: mustCompile(t, `"Ticket " + string(event.id) + ": " + event.title`), DedupKey: mustCompile(t, "string(event.id)")}
}

// TestWebhookDelivery: a signed delivery makes one run with the rendered
// input; a wrong signature (401), an oversized body (413), a body that is
// not JSON (400), a replayed delivery id (409), another method (405) or an
// unknown trigger (404) makes none; the same ticket again within the
// window is a duplicate; a run that could not be created is made when
// the sender retries the same delivery.
func TestWebhookDelivery(t *testing.T) {
	tr := webhookTrigger(t)
	f := newFixture(t, tr)
	path := "/triggers/ops/tickets"
	body := []byte(`{"id":42,"title":"checkout is slow"}`)

	code, res := f.post(t, path, body, sign(t, secret, "msg_1", t0, body))
	if code != http.StatusCreated || len(res.Runs) != 1 || f.runs.made[res.Runs[0]] != "Ticket 42: checkout is slow" {
		t.Fatalf("a signed delivery: %d %+v, runs %v", code, res, f.runs.made)
	}
	refused := []struct {
		name string
		path string
		body []byte
		h    http.Header
		want int
	}{
		{"another key", path, body, sign(t, "whsec_"+strings.Repeat("QUFB", 8), "msg_2", t0, body), http.StatusUnauthorized},
		{"unsigned", path, body, http.Header{}, http.StatusUnauthorized},
		{"stale", path, body, sign(t, secret, "msg_3", t0.Add(-time.Hour), body), http.StatusUnauthorized},
		{"oversized", path, bytes.Repeat([]byte("x"), 2048), sign(t, secret, "msg_4", t0, bytes.Repeat([]byte("x"), 2048)), http.StatusRequestEntityTooLarge},
		{"not JSON", path, []byte("<xml/>"), sign(t, secret, "msg_5", t0, []byte("<xml/>")), http.StatusBadRequest},
		{"replayed", path, body, sign(t, secret, "msg_1", t0, body), http.StatusConflict},
		{"unknown trigger", "/triggers/ops/nope", body, sign(t, secret, "msg_6", t0, body), http.StatusNotFound},
		{"bad path", "/triggers/ops", body, nil, http.StatusNotFound},
	}
	for _, tc := range refused {
		if code, _ := f.post(t, tc.path, tc.body, tc.h); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	if resp, err := http.Get(f.srv.URL + path); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v", resp, err)
	}
	if n := f.runs.count(); n != 1 {
		t.Fatalf("%d runs after the refused deliveries, want 1", n)
	}

	if code, res := f.post(t, path, body, sign(t, secret, "msg_7", t0, body)); code != http.StatusOK || res.Duplicates != 1 {
		t.Errorf("the same ticket again: %d %+v, want a duplicate", code, res)
	}
	other := []byte(`{"id":43,"title":"refund failed"}`)
	f.runs.fail = true
	if code, _ := f.post(t, path, other, sign(t, secret, "msg_8", t0, other)); code != http.StatusServiceUnavailable {
		t.Fatalf("the apiserver away: %d, want 503", code)
	}
	f.runs.fail = false
	if code, res := f.post(t, path, other, sign(t, secret, "msg_8", t0, other)); code != http.StatusCreated || len(res.Runs) != 1 {
		t.Errorf("the sender's retry of the failed delivery: %d %+v, want its run", code, res)
	}

	// A run of the key's name that someone else made is never taken for
	// the trigger's: 409, not a duplicate, and not a 503 to retry forever.
	squatted := []byte(`{"id":44,"title":"squatted"}`)
	f.runs.taken = map[string]bool{fmt.Sprintf("tickets-44-%d", t0.Truncate(10*time.Minute).Unix()): true}
	if code, res := f.post(t, path, squatted, sign(t, secret, "msg_9", t0, squatted)); code != http.StatusConflict || res.Duplicates != 0 {
		t.Errorf("a key whose run name someone else took: %d %+v, want 409", code, res)
	}
}

// TestAlertStorm: 1,000 firing alerts over 3 fingerprints make 3 runs;
// the same alerts again within the window none; after it, 3 again.
func TestAlertStorm(t *testing.T) {
	tr := &Trigger{NamespacedName: types.NamespacedName{Namespace: "ops", Name: "alerts"}, Generation: 1, Kind: Alertmanager,
		BearerToken: "am-token", MaxBody: 1 << 20, DedupWindow: 30 * time.Minute,
		Input: mustCompile(t, `"Alert " + event.labels.alertname + " on " + event.labels.pod`)}
	f := newFixture(t, tr)
	var alerts []map[string]any
	for i := range 1000 {
		alerts = append(alerts, map[string]any{"status": "firing", "fingerprint": fmt.Sprint("fp", i%3),
			"labels": map[string]string{"alertname": "CrashLooping", "pod": fmt.Sprint("web-", i%3)}})
	}
	body, _ := json.Marshal(map[string]any{"version": "4", "status": "firing", "alerts": alerts})
	auth := http.Header{"Authorization": {"Bearer am-token"}}
	if code, res := f.post(t, "/triggers/ops/alerts", body, auth); code != http.StatusCreated || len(res.Runs) != 3 {
		t.Fatalf("the storm: %d %+v, want 3 runs", code, res)
	}
	if code, res := f.post(t, "/triggers/ops/alerts", body, auth); code != http.StatusOK || res.Duplicates != 3 {
		t.Errorf("the storm again: %d %+v, want 3 duplicates", code, res)
	}
	if code, _ := f.post(t, "/triggers/ops/alerts", body, http.Header{"Authorization": {"Bearer guess"}}); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", code)
	}
	f.clk.Step(31 * time.Minute)
	if _, res := f.post(t, "/triggers/ops/alerts", body, auth); len(res.Runs) != 3 {
		t.Errorf("after the window: %+v, want 3 runs", res)
	}
	if n := f.runs.count(); n != 6 {
		t.Errorf("%d runs, want 6", n)
	}
}

// TestRateAndSuspend: past maxRunsPerHour events are counted and dropped;
// a suspended trigger answers and makes no run.
func TestRateAndSuspend(t *testing.T) {
	tr := webhookTrigger(t)
	tr.MaxRunsPerHour = 2
	f := newFixture(t, tr)
	made, limited := 0, 0
	for i := range 5 {
		body := []byte(fmt.Sprintf(`{"id":%d,"title":"t"}`, i))
		_, res := f.post(t, "/triggers/ops/tickets", body, sign(t, secret, fmt.Sprint("m", i), t0, body))
		made += len(res.Runs)
		limited += res.RateLimited
	}
	if made != 2 || limited != 3 {
		t.Errorf("5 tickets at maxRunsPerHour 2: %d runs, %d rate-limited", made, limited)
	}
	tr.Suspend, tr.Generation = true, 2
	body := []byte(`{"id":99,"title":"t"}`)
	if code, res := f.post(t, "/triggers/ops/tickets", body, sign(t, secret, "m99", t0, body)); code != http.StatusOK || !res.Suspended || len(res.Runs) != 0 {
		t.Errorf("suspended: %d %+v", code, res)
	}
}
