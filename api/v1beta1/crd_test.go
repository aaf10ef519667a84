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

package v1beta1_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// These tests install the generated CRDs into a real kube-apiserver and check
// what the schema and CEL rules alone guarantee (no webhook is running).

// control is started by the first test that needs it (env).
var control = &testenv.Lazy{}

func env() *testenv.Env { return control.Get() }

func TestMain(m *testing.M) { control.Main(m) }

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crd-"}}
	if err := env().Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func sampleAgent(ns, name string) *exagentv1.Agent {
	return &exagentv1.Agent{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: exagentv1.AgentSpec{
			Instructions: "You operate the demo namespace.",
			Model: exagentv1.ModelSpec{
				Provider: exagentv1.ModelProviderScripted,
				Script: []exagentv1.ScriptTurn{
					{ToolCalls: []exagentv1.ScriptToolCall{{ID: "c1", Name: "scale", Arguments: fixture.RawJSON(`{"name":"web","replicas":3}`)}}},
					{Text: "done"},
				},
			},
			Tools: []exagentv1.ToolSpec{
				{Name: "scale", Parameters: fixture.RawJSON(`{"type":"object"}`), Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinScale, Kinds: []string{"Deployment.apps"}}},
				{Name: "notify", HTTP: &exagentv1.HTTPTool{URL: "http://127.0.0.1:8080/notify", Timeout: "10s"}},
			},
			Policy: exagentv1.PolicySpec{
				Default: exagentv1.PolicyAllow,
				Rules:   []exagentv1.PolicyRule{{Name: "ask-big", Tools: []string{"scale"}, Action: exagentv1.PolicyAsk, When: "args.replicas > 2"}},
			},
			Limits: exagentv1.LimitsSpec{MaxSteps: ptr.To[int32](10), ActiveTime: "10m"},
		},
	}
}

func sampleRun(ns, name string) *exagentv1.AgentRun {
	return &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: exagentv1.AgentRunSpec{
			AgentRef:        exagentv1.LocalObjectReference{Name: "ops"},
			Input:           "scale web to 3",
			ApprovalTimeout: "1h",
			ActiveTimeLimit: exagentv1.Never,
		},
	}
}

func sampleDecision(ns, name string) *exagentv1.ApprovalDecision {
	return &exagentv1.ApprovalDecision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: exagentv1.ApprovalDecisionSpec{
			RunRef:      exagentv1.LocalObjectReference{Name: "r1"},
			ApprovalID:  "a1",
			Decision:    exagentv1.DecisionApprove,
			Revision:    1,
			PayloadHash: "sha256:00",
			Reason:      "ok",
		},
	}
}

func TestValidSamplesAreAccepted(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for name, obj := range map[string]client.Object{
		"agent":    sampleAgent(ns, "ops"),
		"run":      sampleRun(ns, "r1"),
		"decision": sampleDecision(ns, "d1"),
		"agent with maxRuns at MaxTreeRuns": func() client.Object {
			a := sampleAgent(ns, "many-runs")
			a.Spec.Limits.MaxRuns = ptr.To[int32](exagentv1.MaxTreeRuns) // the marker's Maximum agrees with the constant
			return a
		}(),
		"agent with maxTranscriptBytes at MaxTranscriptBytesLimit": func() client.Object {
			a := sampleAgent(ns, "long-transcript")
			a.Spec.Limits.MaxTranscriptBytes = ptr.To(exagentv1.MaxTranscriptBytesLimit) // 64 MiB, the old default, still allowed
			return a
		}(),
		"agent with maxTranscriptBytes at MinTranscriptBytes": func() client.Object {
			a := sampleAgent(ns, "short-transcript")
			a.Spec.Limits.MaxTranscriptBytes = ptr.To(exagentv1.MinTranscriptBytes)
			return a
		}(),
		"agent with every retention field, keepLast at MaxKeepLast": func() client.Object {
			a := sampleAgent(ns, "retained")
			a.Spec.Retention = exagentv1.RetentionSpec{TTLSecondsAfterFinished: ptr.To[int32](0), KeepLast: ptr.To[int32](exagentv1.MaxKeepLast),
				Archive: &exagentv1.NotifySink{Name: "audit", URL: "https://archive.example/runs", Format: exagentv1.NotifyCloudEvents,
					SigningSecretRef: &exagentv1.SecretKeySelector{Name: "archive", Key: "key"}}}
			return a
		}(),
		"run deleted as soon as it ends": func() client.Object {
			r := sampleRun(ns, "ttl-0")
			r.Spec.TTLSecondsAfterFinished = ptr.To[int32](0)
			return r
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			if err := env().Client.Create(ctx, obj); err != nil {
				t.Fatalf("valid %s rejected: %v", name, err)
			}
		})
	}
}

func TestRejectedByTheSchema(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	tc := map[string]struct {
		obj         client.Object
		wantMessage string
	}{
		"tool with two kinds": {
			obj: func() client.Object {
				a := sampleAgent(ns, "two-kinds")
				a.Spec.Tools[0].HTTP = &exagentv1.HTTPTool{URL: "http://127.0.0.1/x"}
				return a
			}(),
			wantMessage: "exactly one of http, mcp, agent or builtin must be set",
		},
		"tool with no kind": {
			obj: func() client.Object {
				a := sampleAgent(ns, "no-kind")
				a.Spec.Tools[0].Builtin = nil
				return a
			}(),
			wantMessage: "exactly one of http, mcp, agent or builtin must be set",
		},
		"duplicate tool name": {
			obj: func() client.Object {
				a := sampleAgent(ns, "dup")
				a.Spec.Tools[1].Name = "scale"
				return a
			}(),
			wantMessage: "tool names must be unique",
		},
		"scripted without script": {
			obj: func() client.Object {
				a := sampleAgent(ns, "noscript")
				a.Spec.Model.Script = nil
				return a
			}(),
			wantMessage: "provider Scripted needs a non-empty script",
		},
		"malformed approvalTimeout": {
			obj: func() client.Object {
				r := sampleRun(ns, "bad-timeout")
				r.Spec.ApprovalTimeout = "ten minutes"
				return r
			}(),
			wantMessage: "spec.approvalTimeout",
		},
		"invalid serviceAccountName": {
			obj: func() client.Object {
				r := sampleRun(ns, "bad-sa")
				r.Spec.ServiceAccountName = "Not_Valid"
				return r
			}(),
			wantMessage: "spec.serviceAccountName",
		},
		"maxRuns past MaxTreeRuns": {
			obj: func() client.Object {
				a := sampleAgent(ns, "too-many-runs")
				a.Spec.Limits.MaxRuns = ptr.To[int32](exagentv1.MaxTreeRuns + 1)
				return a
			}(),
			wantMessage: "spec.limits.maxRuns",
		},
		"maxTranscriptBytes past MaxTranscriptBytesLimit": {
			obj: func() client.Object {
				a := sampleAgent(ns, "huge-transcript")
				a.Spec.Limits.MaxTranscriptBytes = ptr.To(exagentv1.MaxTranscriptBytesLimit + 1)
				return a
			}(),
			wantMessage: "spec.limits.maxTranscriptBytes",
		},
		"maxTranscriptBytes under MinTranscriptBytes": {
			obj: func() client.Object {
				a := sampleAgent(ns, "tiny-transcript")
				a.Spec.Limits.MaxTranscriptBytes = ptr.To(exagentv1.MinTranscriptBytes - 1)
				return a
			}(),
			wantMessage: "spec.limits.maxTranscriptBytes",
		},
		"negative run TTL": {
			obj: func() client.Object {
				r := sampleRun(ns, "ttl-negative")
				r.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1)
				return r
			}(),
			wantMessage: "spec.ttlSecondsAfterFinished",
		},
		"negative Agent TTL": {
			obj: func() client.Object {
				a := sampleAgent(ns, "ttl-negative")
				a.Spec.Retention.TTLSecondsAfterFinished = ptr.To[int32](-1)
				return a
			}(),
			wantMessage: "spec.retention.ttlSecondsAfterFinished",
		},
		"keepLast past MaxKeepLast": {
			obj: func() client.Object {
				a := sampleAgent(ns, "keep-too-many")
				a.Spec.Retention.KeepLast = ptr.To[int32](exagentv1.MaxKeepLast + 1)
				return a
			}(),
			wantMessage: "spec.retention.keepLast",
		},
		"a Slack archive": {
			obj: func() client.Object {
				a := sampleAgent(ns, "slack-archive")
				a.Spec.Retention.Archive = &exagentv1.NotifySink{Name: "audit", URL: "https://hooks.slack.com/x", Format: exagentv1.NotifySlack}
				return a
			}(),
			wantMessage: "retention.archive is sent as one CloudEvent (io.exagent.run.archived): its format can only be CloudEvents",
		},
		"an archive with events": {
			obj: func() client.Object {
				a := sampleAgent(ns, "archive-events")
				a.Spec.Retention.Archive = &exagentv1.NotifySink{Name: "audit", URL: "https://archive.example/", Events: []exagentv1.NotifyEvent{exagentv1.NotifyRunEnded}}
				return a
			}(),
			wantMessage: "retention.archive is sent one event, io.exagent.run.archived: leave its events empty",
		},
		"unknown decision": {
			obj: func() client.Object {
				d := sampleDecision(ns, "bogus")
				d.Spec.Decision = "Maybe"
				return d
			}(),
			wantMessage: "spec.decision",
		},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			err := env().Client.Create(ctx, tc.obj)
			if err == nil {
				t.Fatalf("created, want rejection mentioning %q", tc.wantMessage)
			}
			if !strings.Contains(err.Error(), tc.wantMessage) {
				t.Fatalf("rejection %q does not mention %q", err, tc.wantMessage)
			}
		})
	}
}

func TestDurationsNeverAndGoSyntaxAreAccepted(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for _, d := range []exagentv1.Duration{"Never", "90s", "1h30m", "1.5h", "250ms"} {
		r := sampleRun(ns, "")
		r.GenerateName = "dur-"
		r.Spec.ApprovalTimeout = d
		if err := env().Client.Create(ctx, r); err != nil {
			t.Errorf("approvalTimeout %q rejected: %v", d, err)
		}
	}
}

func TestDurationParse(t *testing.T) {
	tc := map[string]struct {
		in        exagentv1.Duration
		want      time.Duration
		wantNever bool
		wantErr   bool
	}{
		"unset uses default": {in: "", want: time.Minute},
		"never":              {in: exagentv1.Never, wantNever: true},
		"go duration":        {in: "1h30m", want: 90 * time.Minute},
		"malformed":          {in: "soon", wantErr: true},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			got, never, err := tc.in.Parse(time.Minute)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want || never != tc.wantNever {
				t.Fatalf("Parse(%q) = %v, never=%v; want %v, never=%v", tc.in, got, never, tc.want, tc.wantNever)
			}
		})
	}
}

func TestSpecsAreImmutable(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)

	run := sampleRun(ns, "immutable")
	if err := env().Client.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	run.Spec.Input = "something else"
	err := env().Client.Update(ctx, run)
	if err == nil || !strings.Contains(err.Error(), "spec is immutable: create a new AgentRun instead") {
		t.Fatalf("AgentRun spec update: got %v, want the CEL immutability message", err)
	}

	d := sampleDecision(ns, "immutable")
	if err := env().Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Decision = exagentv1.DecisionDeny
	err = env().Client.Update(ctx, d)
	if err == nil || !strings.Contains(err.Error(), "spec is immutable: create a new ApprovalDecision instead") {
		t.Fatalf("ApprovalDecision spec update: got %v, want the CEL immutability message", err)
	}

	seg := &exagentv1.AgentRunSegment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.Repeat("a", 64)},
		Spec: exagentv1.AgentRunSegmentSpec{RunName: "immutable", RunUID: "uid", Index: 0,
			Messages: []exagentv1.Message{{Role: exagentv1.RoleUser, Content: strings.Repeat("x", 60000)}},
			Values:   []exagentv1.SegmentValue{{SHA256: strings.Repeat("b", 64), Data: strings.Repeat("y", 60000)}}},
	}
	if err := env().Client.Create(ctx, seg); err != nil {
		t.Fatal(err)
	}
	seg.Spec.Messages[0].Content = "edited"
	err = env().Client.Update(ctx, seg)
	if err == nil || !strings.Contains(err.Error(), "a segment is immutable") {
		t.Fatalf("AgentRunSegment spec update: got %v, want the CEL immutability message", err)
	}

	// Metadata and status stay writable: labels for GitOps, status for the controller.
	run.Spec.Input = "scale web to 3"
	run.Labels = map[string]string{"team": "ops"}
	if err := env().Client.Update(ctx, run); err != nil {
		t.Fatalf("label update rejected: %v", err)
	}
}

// TestPrinterColumns asks the apiserver for kubectl's table view and checks
// the column names users see.
func TestPrinterColumns(t *testing.T) {
	ns := newNamespace(t)
	tc := map[string]struct {
		resource string
		want     []string
	}{
		"agentruns":         {resource: "agentruns", want: []string{"Name", "AGENT", "PHASE", "STEP", "PENDING", "AGE", "MESSAGE"}},
		"approvaldecisions": {resource: "approvaldecisions", want: []string{"Name", "DECISION", "RUN", "ACTOR", "PHASE", "AGE", "MESSAGE"}},
		"agentrunsegments":  {resource: "agentrunsegments", want: []string{"Name", "RUN", "INDEX", "BYTES", "AGE"}},
		"agents":            {resource: "agents", want: []string{"Name", "PROVIDER", "MODEL", "READY", "REASON", "AGE", "MESSAGE"}},
	}
	cfg := rest.CopyConfig(env().Config)
	cfg.GroupVersion = &exagentv1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = clientNegotiator()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			body, err := rc.Get().Namespace(ns).Resource(tc.resource).
				SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
				DoRaw(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var table metav1.Table
			if err := json.Unmarshal(body, &table); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range table.ColumnDefinitions {
				got = append(got, c.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("columns (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShortNames checks the short names kubectl resolves through discovery.
func TestShortNames(t *testing.T) {
	resources, err := discoveryFor(env().Config).ServerResourcesForGroupVersion(exagentv1.GroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, r := range resources.APIResources {
		if len(r.ShortNames) > 0 {
			got[r.Name] = r.ShortNames
		}
	}
	want := map[string][]string{"agentruns": {"ar"}, "approvaldecisions": {"ad"}, "agentrunsegments": {"ars"}, "agents": {"ag"}, "conversations": {"conv"}, "agentschedules": {"asched"}, "agenttriggers": {"atrig"}, "agentbudgets": {"abudget"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("short names (-want +got):\n%s", diff)
	}
}
