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

package notify

import (
	"encoding/json"
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// With --ui-url-template every notification links to the run's page
// (CloudEvents data.links.ui, a Slack button); without it nothing
// changes: no links key, no actions block.
func TestLinks(t *testing.T) {
	events := []exagentv1.NotifyEvent{exagentv1.NotifyApprovalRequested, exagentv1.NotifyRunUncertain, exagentv1.NotifyRunEnded}
	tests := map[string]struct {
		template URLTemplate
		want     string
	}{
		"no template":   {},
		"the page":      {template: "http://127.0.0.1:8000/runs/{namespace}/{name}", want: "http://127.0.0.1:8000/runs/team-a/triage-42"},
		"query escaped": {template: "https://ui.example/?ns={namespace}&run={name}", want: "https://ui.example/?ns=team-a&run=triage-42"},
	}
	for name, tc := range tests {
		for _, ev := range events {
			t.Run(name+"/"+string(ev), func(t *testing.T) {
				d := Data{Event: ev, Run: RunRef{Namespace: "team-a", Name: "triage-42", Agent: "ops"},
					Approval: &ApprovalData{ID: "a-1", Tool: "charge"}}
				d.Links = tc.template.links(d)
				ce, _, err := Body(exagentv1.NotifyCloudEvents, "id-1", t0, "s", d)
				if err != nil {
					t.Fatal(err)
				}
				var got struct {
					Data map[string]json.RawMessage `json:"data"`
				}
				if err := json.Unmarshal(ce, &got); err != nil {
					t.Fatal(err)
				}
				links, has := got.Data["links"]
				if has != (tc.want != "") {
					t.Fatalf("CloudEvent data has links %v (%s), want %v", has, links, tc.want != "")
				}
				want, _ := json.Marshal(tc.want) // as JSON writes it (& is \u0026)
				if has && string(links) != `{"ui":`+string(want)+`}` {
					t.Errorf("data.links = %s, want ui %s", links, tc.want)
				}
				slack, _, err := Body(exagentv1.NotifySlack, "id-1", t0, "s", d)
				if err != nil {
					t.Fatal(err)
				}
				button := `{"type":"actions","elements":[{"type":"button","text":{"type":"plain_text","text":"Open the run's page"},"url":` + string(want) + `}]}`
				if hasButton := strings.Contains(string(slack), `"actions"`); hasButton != (tc.want != "") {
					t.Fatalf("Slack message has a button %v, want %v:\n%s", hasButton, tc.want != "", slack)
				}
				if tc.want != "" && !strings.Contains(string(slack), button) {
					t.Errorf("Slack message lacks %s:\n%s", button, slack)
				}
			})
		}
	}
}
