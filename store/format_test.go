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
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestCommitRefusesANewerFormat: a run whose journal a newer release wrote
// is never written — the refusal comes before any step or request (this
// store has no client at all) — while the formats this release reads pass
// that check.
func TestCommitRefusesANewerFormat(t *testing.T) {
	for format, refused := range map[int32]bool{0: false, 1: false, exagentv1.JournalFormat: false, exagentv1.JournalFormat + 1: true} {
		run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}}
		run.Status.FormatVersion = format
		stepRan := false
		w := Write{Run: run, Status: run.Status, Now: time.Now(), Steps: []Step{func(context.Context, *Draft) error {
			stepRan = true
			return errors.New("stop before the write")
		}}}
		_, err := (&Store{}).Commit(context.Background(), w)
		if got := errors.Is(err, ErrUnknownFormat); got != refused {
			t.Errorf("format %d: ErrUnknownFormat %v (error %v), want %v", format, got, err, refused)
		}
		if stepRan == refused {
			t.Errorf("format %d: steps ran %v", format, stepRan)
		}
	}
}
