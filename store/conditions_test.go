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

package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMergeConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	cond := func(typ string, st metav1.ConditionStatus, reason string, at metav1.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, LastTransitionTime: at}
	}
	tests := map[string]struct {
		old, computed, overrides, want []metav1.Condition
	}{
		"an unchanged status keeps its transition time": {
			old:      []metav1.Condition{cond("Ready", "False", "Queued", t0)},
			computed: []metav1.Condition{cond("Ready", "False", "Running", t1)},
			want:     []metav1.Condition{cond("Ready", "False", "Running", t0)},
		},
		"a changed status takes the new time": {
			old:      []metav1.Condition{cond("Ready", "False", "Running", t0)},
			computed: []metav1.Condition{cond("Ready", "True", "Succeeded", t1)},
			want:     []metav1.Condition{cond("Ready", "True", "Succeeded", t1)},
		},
		"a condition no longer reported is dropped; one reported again takes the new time": {
			old: []metav1.Condition{cond("Ready", "False", "Running", t0), cond("AwaitingApproval", "True", "Pending", t0),
				cond("Stalled", "False", "NotEnded", t0)},
			computed: []metav1.Condition{cond("Ready", "False", "Running", t1), cond("Uncertain", "True", "OutcomeUncertain", t1)},
			want:     []metav1.Condition{cond("Ready", "False", "Running", t0), cond("Uncertain", "True", "OutcomeUncertain", t1)},
		},
		"an override wins over the journal's view": {
			computed:  []metav1.Condition{cond("Ready", "False", "Queued", t1), cond("Uncertain", "False", "NoUncertainCall", t1)},
			overrides: []metav1.Condition{cond("Ready", "False", "AgentNotFound", t1)},
			want:      []metav1.Condition{cond("Ready", "False", "AgentNotFound", t1), cond("Uncertain", "False", "NoUncertainCall", t1)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, mergeConditions(tc.old, tc.computed, tc.overrides)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
