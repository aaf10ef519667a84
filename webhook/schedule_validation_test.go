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

package webhook

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestValidateAgentSchedule: each refusal names the schedule's own field
// (the run template's errors under spec.runTemplate) and says why.
func TestValidateAgentSchedule(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*exagentv1.AgentSchedule)
		want []string // substrings of the errors; none: valid
	}{
		"valid":          {},
		"a macro":        {edit: func(s *exagentv1.AgentSchedule) { s.Spec.Schedule = "@weekly" }},
		"six fields":     {edit: func(s *exagentv1.AgentSchedule) { s.Spec.Schedule = "0 30 2 * * *" }, want: []string{"spec.schedule", "not a 5-field cron expression"}},
		"@every":         {edit: func(s *exagentv1.AgentSchedule) { s.Spec.Schedule = "@every 5m" }, want: []string{"spec.schedule", "@every is not supported"}},
		"TZ in the expr": {edit: func(s *exagentv1.AgentSchedule) { s.Spec.Schedule = "CRON_TZ=UTC 0 2 * * *" }, want: []string{"spec.schedule", "spec.timeZone"}},
		"unknown zone":   {edit: func(s *exagentv1.AgentSchedule) { s.Spec.TimeZone = "Moon/Base" }, want: []string{"spec.timeZone", "unknown IANA time zone"}},
		"Local":          {edit: func(s *exagentv1.AgentSchedule) { s.Spec.TimeZone = "Local" }, want: []string{"spec.timeZone", "replicas need not share"}},
		"a short lease":  {edit: func(s *exagentv1.AgentSchedule) { s.Spec.RunTemplate.LeaseDuration = "1s" }, want: []string{"spec.runTemplate.leaseDuration"}},
		"a long name":    {edit: func(s *exagentv1.AgentSchedule) { s.Name = strings.Repeat("n", 51) }, want: []string{"metadata.name", "50"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := &exagentv1.AgentSchedule{
				ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ops"},
				Spec: exagentv1.AgentScheduleSpec{Schedule: "30 2 * * *", TimeZone: "America/New_York",
					RunTemplate: exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: "ops"}, Input: "review"}},
			}
			if tc.edit != nil {
				tc.edit(s)
			}
			errs := ValidateAgentSchedule(s)
			if len(tc.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			got := errs.ToAggregate()
			if got == nil {
				t.Fatalf("admitted, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("errors %v, want %q", got, w)
				}
			}
		})
	}
}
