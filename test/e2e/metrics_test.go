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
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsEndpoint scrapes the manager's metrics endpoint as a
// ServiceAccount bound to exagent-metrics-reader (allowed), as one without
// it (403) and with no token (401), and checks exagent's metrics against
// the runs of the test: two runs Succeeded after calling a tool once each,
// one waiting for approval until alice approves it.
func TestMetricsEndpoint(t *testing.T) {
	ns := namespace(t, "e2e-metrics")
	bindApprovers(t, ns)
	must(t, "", "", "create", "serviceaccount", "prometheus", "-n", ns)
	must(t, "", "", "create", "serviceaccount", "nosy", "-n", ns)
	must(t, "", "", "create", "clusterrolebinding", "e2e-metrics-prometheus", "--clusterrole=exagent-metrics-reader",
		"--serviceaccount="+ns+":prometheus")
	t.Cleanup(func() { kubectl(t, "", "", "delete", "clusterrolebinding", "e2e-metrics-prometheus") })
	reader := strings.TrimSpace(must(t, "", "", "create", "token", "prometheus", "-n", ns))
	nosy := strings.TrimSpace(must(t, "", "", "create", "token", "nosy", "-n", ns))

	if code, _ := scrape(t, ""); code != http.StatusUnauthorized {
		t.Errorf("a scrape without a token: HTTP %d, want 401", code)
	}
	if code, _ := scrape(t, nosy); code != http.StatusForbidden {
		t.Errorf("a scrape by a ServiceAccount without exagent-metrics-reader: HTTP %d, want 403", code)
	}

	effects := newEffectServer(t, false)
	must(t, "", strings.ReplaceAll(httpAgent(ns, "auto", effects.URL, "Allow", "5s"), "charge", "metrics_probe"), "apply", "-f", "-")
	must(t, "", httpAgent(ns, "asks", effects.URL, "Ask", "5s"), "apply", "-f", "-")
	for _, r := range []string{runYAML(ns, "auto-1", "auto"), runYAML(ns, "auto-2", "auto"), runYAML(ns, "asks-1", "asks")} {
		must(t, "", r, "apply", "-f", "-")
	}
	must(t, "", "", "wait", "agentrun/auto-1", "agentrun/auto-2", "-n", ns, "--for=condition=Succeeded", "--timeout="+waitTimeout)
	must(t, "", "", "wait", "agentrun/asks-1", "-n", ns, "--for=condition=AwaitingApproval", "--timeout="+waitTimeout)

	before := scrapeFamilies(t, reader)
	want := map[string]float64{
		`exagent_runs{namespace="` + ns + `",phase="Succeeded"}`:             2,
		`exagent_runs{namespace="` + ns + `",phase="AwaitingApproval"}`:      1,
		`exagent_pending_approvals{namespace="` + ns + `"}`:                  1,
		`exagent_uncertain_calls{namespace="` + ns + `"}`:                    0,
		`exagent_tool_calls_total{outcome="Succeeded",tool="metrics_probe"}`: 2,
	}
	for series, v := range want {
		if got, ok := value(before, series); !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, v)
		}
	}
	for _, series := range []string{`exagent_status_writes_total{result="Written"}`, `exagent_model_requests_total{outcome="Succeeded",provider="Scripted"}`} {
		if got, _ := value(before, series); got < 4 {
			t.Errorf("%s = %v, want at least 4 (two runs of two model turns)", series, got)
		}
	}
	if got, _ := value(before, "exagent_status_bytes_count"); got < 1 {
		t.Errorf("exagent_status_bytes_count = %v, want writes measured", got)
	}

	must(t, "alice", "", "approve", "asks-1", "-n", ns, "--reason", "metrics test")
	must(t, "", "", "wait", "agentrun/asks-1", "-n", ns, "--for=condition=Succeeded", "--timeout="+waitTimeout)
	after := scrapeFamilies(t, reader)
	wait0, _ := value(before, `exagent_approval_wait_seconds_count{decision="Approved"}`)
	wait1, _ := value(after, `exagent_approval_wait_seconds_count{decision="Approved"}`)
	if wait1-wait0 != 1 {
		t.Errorf("approval waits observed with decision Approved went from %v to %v, want one more", wait0, wait1)
	}
	for series, v := range map[string]float64{
		`exagent_runs{namespace="` + ns + `",phase="Succeeded"}`: 3,
		`exagent_pending_approvals{namespace="` + ns + `"}`:      0,
	} {
		if got, _ := value(after, series); got != v {
			t.Errorf("after the approval %s = %v, want %v", series, got, v)
		}
	}
	if _, ok := value(after, `exagent_runs{namespace="`+ns+`",phase="AwaitingApproval"}`); ok {
		t.Errorf("no run of %s waits any more, but exagent_runs still has an AwaitingApproval series", ns)
	}
}

// scrape GETs the metrics endpoint with a bearer token ("" for none).
func scrape(t *testing.T, token string) (int, string) {
	t.Helper()
	s.up(t)
	req, err := http.NewRequest(http.MethodGet, "https://"+fmt.Sprintf("127.0.0.1:%d", s.metricsPort)+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The manager's metrics certificate is self-signed (none is mounted).
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("scraping: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func scrapeFamilies(t *testing.T, token string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := scrape(t, token)
	if code != http.StatusOK {
		t.Fatalf("scrape as the metrics reader: HTTP %d: %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing the metrics: %v", err)
	}
	return fams
}

// value finds one series, written name{label="v",…} with the labels in
// alphabetical order; a histogram's _count and _sum are series too.
func value(fams map[string]*dto.MetricFamily, series string) (float64, bool) {
	name, labels, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
	suffix := ""
	for _, sfx := range []string{"_count", "_sum"} {
		if _, ok := fams[name]; !ok && strings.HasSuffix(name, sfx) {
			name, suffix = strings.TrimSuffix(name, sfx), sfx
		}
	}
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	for _, m := range f.Metric {
		var parts []string
		for _, l := range m.Label {
			parts = append(parts, l.GetName()+"="+strconv.Quote(l.GetValue()))
		}
		if strings.Join(parts, ",") != labels {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil && suffix == "_count":
			return float64(m.Histogram.GetSampleCount()), true
		case m.Histogram != nil && suffix == "_sum":
			return m.Histogram.GetSampleSum(), true
		}
	}
	return 0, false
}
