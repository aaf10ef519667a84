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

package app

import (
	"bytes"
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestServed: a run is served when the exagent webhook stamped it or a
// manager wrote its phase; neither means no manager serves its namespace,
// which the verbs that act or wait refuse with a sentence naming it, and
// show prints above everything else.
func TestServed(t *testing.T) {
	stamped := makeRun("r", "team-a").Obj()
	stamped.Annotations = map[string]string{exagentv1.AnnotationAdmittedBy: "system:serviceaccount:exagent-system:exagent-manager"}
	for name, tc := range map[string]struct {
		run  *exagentv1.AgentRun
		want bool
	}{
		"stamped, not yet reconciled":         {run: stamped, want: true},
		"reconciled before the stamp existed": {run: makeRun("r", "team-a").Phase(exagentv1.PhaseQueued).Obj(), want: true},
		"neither":                             {run: makeRun("r", "elsewhere").Obj(), want: false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := served(tc.run); got != tc.want {
				t.Errorf("served = %v, want %v", got, tc.want)
			}
			if err := errNotServed(tc.run); (err == nil) != tc.want {
				t.Errorf("errNotServed = %v", err)
			}
		})
	}
	err := errNotServed(makeRun("r", "elsewhere").Obj())
	if err == nil || !strings.HasPrefix(err.Error(), `no exagent manager serves namespace "elsewhere": run "r" was not admitted by exagent`) {
		t.Errorf("the refusal: %v", err)
	}
	var out bytes.Buffer
	unserved := makeRun("r", "elsewhere").Obj()
	if err := renderShow(&out, showView{Run: unserved, NotServed: notServedSentence(unserved), Now: t0}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\nno exagent manager serves namespace \"elsewhere\"") {
		t.Errorf("show of an unserved run:\n%s", out.String())
	}
}
