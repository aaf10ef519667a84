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

package trigger

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

var t0 = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// signed is a delivery signed with key at ts.
func signed(t *testing.T, key, id string, ts time.Time, body []byte) http.Header {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(key)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(id, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", sig)
	return h
}

// TestVerifySignature: a delivery signed with the trigger's secret within
// the tolerance passes and gives its id; another key, a changed body, an
// old or future timestamp, or a missing id is unauthenticated.
func TestVerifySignature(t *testing.T) {
	body := []byte(`{"ticket":42}`)
	other := "whsec_" + strings.Repeat("QUFB", 8)
	tests := []struct {
		name string
		h    http.Header
		body []byte
		ok   bool
	}{
		{"valid", signed(t, secret, "msg_1", t0, body), body, true},
		{"another key", signed(t, other, "msg_1", t0, body), body, false},
		{"body changed", signed(t, secret, "msg_1", t0, body), []byte(`{"ticket":43}`), false},
		{"too old", signed(t, secret, "msg_1", t0.Add(-6*time.Minute), body), body, false},
		{"from the future", signed(t, secret, "msg_1", t0.Add(6*time.Minute), body), body, false},
		{"no id", func() http.Header { h := signed(t, secret, "msg_1", t0, body); h.Del("webhook-id"); return h }(), body, false},
		{"no signature", func() http.Header { h := signed(t, secret, "msg_1", t0, body); h.Del("webhook-signature"); return h }(), body, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := VerifySignature(secret, tc.body, tc.h, t0)
			if tc.ok != (err == nil) {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && id != "msg_1" {
				t.Errorf("id %q", id)
			}
			if !tc.ok && !strings.Contains(err.Error(), "unauthenticated") {
				t.Errorf("err %v, want ErrUnauthenticated", err)
			}
		})
	}
	if _, err := VerifySignature("not-a-secret", body, signed(t, secret, "m", t0, body), t0); err == nil {
		t.Error("a malformed secret verified")
	}
}

// TestVerifyBearer: only the exact token passes.
func TestVerifyBearer(t *testing.T) {
	for _, tc := range []struct {
		header string
		ok     bool
	}{{"Bearer s3cret", true}, {"Bearer s3cre", false}, {"Bearer s3cret2", false}, {"s3cret", false}, {"", false}} {
		h := http.Header{}
		h.Set("Authorization", tc.header)
		if err := VerifyBearer("s3cret", h); tc.ok != (err == nil) {
			t.Errorf("%q: err %v, want ok=%v", tc.header, err, tc.ok)
		}
	}
	if err := VerifyBearer("", http.Header{"Authorization": {"Bearer "}}); err == nil {
		t.Error("an empty token passed")
	}
}

// TestWindow: a key passes once per window (a replayed delivery id, an
// alert storm's key), again after it; a flood of distinct keys keeps the
// table at its bound.
func TestWindow(t *testing.T) {
	w := NewWindow(time.Minute, 100)
	if !w.First("k", t0) || w.First("k", t0.Add(59*time.Second)) {
		t.Fatal("a key passed twice within its window, or not at all")
	}
	if !w.First("k", t0.Add(time.Minute)) {
		t.Error("a key did not pass again after its window")
	}
	storm := 0
	for i := range 1000 {
		if w.First("same", t0.Add(time.Duration(i)*time.Millisecond)) {
			storm++
		}
	}
	if storm != 1 {
		t.Errorf("1,000 identical events passed %d times, want 1", storm)
	}
	for i := range 10_000 {
		w.First(fmt.Sprint("flood-", i), t0.Add(2*time.Minute))
		if w.Len() > 100 || len(w.order) > 101 {
			t.Fatalf("after %d keys: %d remembered, %d in order: the bound is 100", i+1, w.Len(), len(w.order))
		}
	}
	if w.First("flood-9999", t0.Add(2*time.Minute)) {
		t.Error("the newest key of the flood was forgotten")
	}
}

// TestAlerts: 1,000 firing alerts over 3 fingerprints are 3 alerts;
// resolved ones only when asked; another version, too many alerts or a
// missing fingerprint is refused.
func TestAlerts(t *testing.T) {
	payload := func(version string, n int, status func(i int) string, fp func(i int) string) []byte {
		var alerts []map[string]any
		for i := range n {
			alerts = append(alerts, map[string]any{"status": status(i), "fingerprint": fp(i),
				"labels": map[string]string{"alertname": "CrashLooping", "pod": fp(i)}, "startsAt": t0.Format(time.RFC3339)})
		}
		b, _ := json.Marshal(map[string]any{"version": version, "status": "firing", "alerts": alerts})
		return b
	}
	firing := func(int) string { return "firing" }
	three := func(i int) string { return fmt.Sprint("fp", i%3) }
	got, err := Alerts(payload("4", 1000, firing, three), false)
	if err != nil || len(got) != 3 || got[0].Fingerprint != "fp0" || got[2].Labels["pod"] != "fp2" {
		t.Fatalf("1,000 alerts over 3 fingerprints: %d alerts, %v", len(got), err)
	}
	half := func(i int) string { return map[bool]string{true: "firing", false: "resolved"}[i%2 == 0] }
	uniq := func(i int) string { return fmt.Sprint("fp", i) }
	if got, _ := Alerts(payload("4", 4, half, uniq), false); len(got) != 2 {
		t.Errorf("resolved alerts made %d, want only the 2 firing", len(got))
	}
	if got, _ := Alerts(payload("4", 4, half, uniq), true); len(got) != 4 {
		t.Errorf("with resolved: %d, want 4", len(got))
	}
	for name, body := range map[string][]byte{
		"version 3":      payload("3", 1, firing, uniq),
		"too many":       payload("4", 1001, firing, uniq),
		"no fingerprint": payload("4", 1, firing, func(int) string { return "" }),
		"not JSON":       []byte("<html>"),
	} {
		if _, err := Alerts(body, false); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if ev := got[0].Event(); ev["fingerprint"] != "fp0" {
		t.Errorf("event %v", ev)
	}
}

// TestExpr: an expression renders a string from the event; one that
// yields no string is refused at compile time; an oversized result, a
// missing field, and a costly evaluation over a hostile body are errors,
// never a cut string or a hung process.
func TestExpr(t *testing.T) {
	ctx := context.Background()
	ev := map[string]any{"labels": map[string]string{"pod": "web-1"}, "body": strings.Repeat("x", 4096)}
	in, err := Compile(`"pod " + event.labels.pod + " crash-loops"`)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := in.Render(ctx, ev, 1024); err != nil || s != "pod web-1 crash-loops" {
		t.Errorf("render: %q %v", s, err)
	}
	if _, err := Compile("1 + 2"); err == nil || !strings.Contains(err.Error(), "not a string") {
		t.Errorf("an int expression compiled: %v", err)
	}
	if _, err := Compile("event.("); err == nil {
		t.Error("a syntax error compiled")
	}
	big, _ := Compile("event.body")
	if _, err := big.Render(ctx, ev, 1024); err == nil || !strings.Contains(err.Error(), "at most 1024") {
		t.Errorf("an oversized result: %v", err)
	}
	missing, _ := Compile("event.nothing")
	if _, err := missing.Render(ctx, ev, 1024); err == nil {
		t.Error("a missing field rendered")
	}
	costly, err := Compile(`[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, [1,2,3,4,5,6,7,8,9,10].map(d, event.body + event.body)))).size() > 0 ? "x" : "y"`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := costly.Render(ctx, ev, 1024); err == nil {
		t.Error("a costly evaluation over a 4 KiB body was not stopped")
	}
}

// TestRate: at most limit events per sliding window.
func TestRate(t *testing.T) {
	r := NewRate(3, time.Hour)
	var allowed int
	for i := range 10 {
		if r.Allow(t0.Add(time.Duration(i) * time.Minute)) {
			allowed++
		}
	}
	if allowed != 3 {
		t.Errorf("%d allowed in an hour, want 3", allowed)
	}
	if !r.Allow(t0.Add(time.Hour)) || r.Allow(t0.Add(time.Hour+time.Second)) {
		t.Error("the window did not slide: one more at t0+1h, then none")
	}
	if NewRate(0, time.Hour).Allow(t0) {
		t.Error("a zero rate allowed an event")
	}
}
