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
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/fields"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// waitingRun is a run that waits on the world (phase Waiting): one entry
// per waiting call, with what it waits for and until when.
type waitingRun struct {
	Namespace string    `json:"namespace"`
	Run       string    `json:"run"`
	Agent     string    `json:"agent"`
	Call      string    `json:"call"`
	Tool      string    `json:"tool"`
	Kind      string    `json:"kind"`
	For       string    `json:"for,omitempty"`
	Until     time.Time `json:"until"`
}

// maxWaitingLines bounds the lines list prints for waiting runs; -o json
// has them all.
const maxWaitingLines = 20

// waitingPhase selects the runs that wait on a timer, an object or a callback.
func waitingPhase() fields.Selector {
	return fields.OneTermEqualSelector(exagentv1.FieldStatusPhase, string(exagentv1.PhaseWaiting))
}

// waitingRuns reads the Waiting runs (of --agent if set). A failure is a
// warning: the approvals are the list.
func (o *listOptions) waitingRuns(ctx context.Context) []waitingRun {
	return waitsOf(o.extraRuns(ctx, waitingPhase(), "the waiting runs"))
}

// waitsOf are the waiting calls of the Waiting runs among runs, the
// soonest to end first.
func waitsOf(runs []exagentv1.AgentRun) []waitingRun {
	var out []waitingRun
	for i := range runs {
		r := &runs[i]
		if r.Status.Phase != exagentv1.PhaseWaiting {
			continue
		}
		for j := range r.Status.Calls {
			c := &r.Status.Calls[j]
			if c.State != exagentv1.CallStarted || c.Wait == nil {
				continue
			}
			out = append(out, waitingRun{Namespace: r.Namespace, Run: r.Name, Agent: r.Spec.AgentRef.Name,
				Call: c.ID, Tool: c.Tool, Kind: string(c.Wait.Kind), For: waitTarget(c.Wait), Until: c.Wait.Until.UTC()})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Until.Before(out[j].Until) })
	return out
}

// waitTarget says what a wait waits for, beyond its time.
func waitTarget(w *exagentv1.CallWait) string {
	switch {
	case w.Object != nil:
		o := w.Object
		what := o.Kind + " " + o.Namespace + "/" + o.Name
		if o.Name == "" {
			what = o.Kind + " " + o.Namespace + " -l " + o.LabelSelector
		}
		return what + " " + o.Condition
	case w.Callback != "":
		return "callback " + w.Callback
	}
	return ""
}

// printWaiting writes one line per waiting call — "waiting: RUN c1 (nap)
// Timer until … (in 42m)", the run as NAMESPACE/RUN when qualified — at
// most maxWaitingLines, after a blank line when something was printed above.
func printWaiting(w io.Writer, waits []waitingRun, now time.Time, qualified, gap bool) error {
	lines := make([]string, len(waits))
	for i, x := range waits {
		run := x.Run
		if qualified {
			run = x.Namespace + "/" + x.Run
		}
		what := x.Kind
		if x.For != "" {
			what += " " + x.For
		}
		lines[i] = fmt.Sprintf("waiting: %s %s (%s) %s until %s (%s)", run, x.Call, x.Tool, what,
			x.Until.Format(time.RFC3339), untilIn(x.Until, now))
	}
	return printBounded(w, lines, maxWaitingLines, gap, "waiting calls (kubectl approve list --waiting -o json)")
}

// untilIn is how far until is from now, as "in 42m" or "due".
func untilIn(until, now time.Time) string {
	d := until.Sub(now)
	if d <= 0 {
		return "due"
	}
	return "in " + d.Round(time.Second).String()
}
