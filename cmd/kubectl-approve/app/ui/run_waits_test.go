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

package ui

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestRunPageShowsWaits: a Waiting run's page lists each waiting call —
// what it waits for, since and until when — and no decision form.
func TestRunPageShowsWaits(t *testing.T) {
	at := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	w := &exagentv1.CallWait{Kind: exagentv1.WaitObject, Since: metav1.NewMicroTime(at), Until: metav1.NewMicroTime(at.Add(time.Hour)),
		Object: &exagentv1.WaitedObject{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "web", Condition: "Available=True"}}
	v := runView{Namespace: "prod", Name: "r", Phase: string(exagentv1.PhaseWaiting), Transcript: transcriptView{Latest: true},
		Waits: []waitView{{ID: "c2", Tool: "wait_ready", Kind: string(w.Kind), For: waitFor(w),
			Since: w.Since.UTC().Format(time.RFC3339), Until: w.Until.UTC().Format(time.RFC3339)}}}
	html := renderRunPage(t, v)
	want := `<li id="wait-c2">call c2 (wait_ready): Object — Deployment prod/web to be Available=True, since 2026-03-04T10:00:00Z, until 2026-03-04T11:00:00Z</li>`
	if !strings.Contains(html, want) {
		t.Errorf("the run page lacks %s", want)
	}
	if strings.Contains(html, `name="decision"`) {
		t.Error("a Waiting run's page offers a decision form")
	}
	if got := waitFor(&exagentv1.CallWait{Kind: exagentv1.WaitCallback, Callback: "cb-1"}); got != "callback cb-1" {
		t.Errorf("waitFor(callback) = %q", got)
	}
}
