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

package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/clip"
	"github.com/exagent-io/exagent/triggers"
)

// The bounds of what one Kubernetes Event hands to an AgentTrigger's
// expressions. Whoever may create Events in a watched namespace writes
// their text, so every string is clipped before CEL sees it: an Event
// may hold up to the apiserver's object size (~1.5 MiB).
const (
	// maxEventMessage bounds event.message.
	maxEventMessage = 4 << 10
	// maxEventField bounds every other string of event.
	maxEventField = 512
)

// eventFilter is a trigger's kubernetesEvents selectors, split into what
// the apiserver filters (a field selector: one value per field) and what
// the watcher checks of every Event it receives.
type eventFilter struct {
	reasons, types, kinds map[string]bool
	name                  string
}

// newEventFilter reads src's selectors.
func newEventFilter(src *exagentv1.KubernetesEventsTriggerSource) eventFilter {
	f := eventFilter{reasons: set(src.Reasons), types: map[string]bool{}}
	for _, t := range src.Types {
		f.types[string(t)] = true
	}
	if o := src.InvolvedObject; o != nil {
		f.kinds, f.name = set(o.Kinds), o.Name
	}
	return f
}

func set(vs []string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

// fieldSelector is what the apiserver can filter of f: core/v1 Events
// support field selectors on reason, type, involvedObject.kind and
// involvedObject.name, one value each, so a selector of one value goes
// to the apiserver (which then sends nothing else) and several are
// checked by matches. The values are the trigger author's, escaped.
func (f eventFilter) fieldSelector() string {
	var sel []fields.Selector
	one := func(field string, m map[string]bool) {
		if len(m) == 1 {
			for v := range m {
				sel = append(sel, fields.OneTermEqualSelector(field, v))
			}
		}
	}
	one("reason", f.reasons)
	one("type", f.types)
	one("involvedObject.kind", f.kinds)
	if f.name != "" {
		sel = append(sel, fields.OneTermEqualSelector("involvedObject.name", f.name))
	}
	if len(sel) == 0 {
		return ""
	}
	return fields.AndSelectors(sel...).String()
}

// matches checks every selector of f against ev (the apiserver's field
// selector too: an apiserver that ignored it must not widen the trigger).
func (f eventFilter) matches(ev *corev1.Event) bool {
	in := func(m map[string]bool, v string) bool { return len(m) == 0 || m[v] }
	return in(f.reasons, ev.Reason) && in(f.types, ev.Type) && in(f.kinds, ev.InvolvedObject.Kind) &&
		(f.name == "" || f.name == ev.InvolvedObject.Name)
}

// eventTime is when ev last happened: the newest of its times (an Event
// written by events.k8s.io/v1 has eventTime and a series, a core/v1 one
// lastTimestamp), its creation when it carries none.
func eventTime(ev *corev1.Event) time.Time {
	t := ev.CreationTimestamp.Time
	for _, c := range []time.Time{ev.FirstTimestamp.Time, ev.LastTimestamp.Time, ev.EventTime.Time} {
		if c.After(t) {
			t = c
		}
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	return t
}

// triggerEvent is the trigger event of a Kubernetes Event: what CEL sees
// as the variable event (every string clipped), and its default dedup
// key — the involved object's namespace, kind and name with the reason,
// so a pod's repeated BackOff Events within the window make one run.
func triggerEvent(ev *corev1.Event) triggers.Event {
	o := ev.InvolvedObject
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	count := int64(ev.Count)
	if ev.Series != nil && int64(ev.Series.Count) > count {
		count = int64(ev.Series.Count)
	}
	first := ev.FirstTimestamp.Time
	if first.IsZero() {
		first = ev.EventTime.Time
	}
	c := func(s string) string { return clip.Bytes(s, maxEventField, clip.Ellipsis) }
	data := map[string]any{
		"name":      c(ev.Name),
		"namespace": c(ev.Namespace),
		"reason":    c(ev.Reason),
		"type":      c(ev.Type),
		"message":   clip.Bytes(ev.Message, maxEventMessage, clip.Ellipsis),
		"count":     count,
		"involvedObject": map[string]any{
			"kind": c(o.Kind), "namespace": c(o.Namespace), "name": c(o.Name), "uid": c(string(o.UID)),
			"apiVersion": c(o.APIVersion), "fieldPath": c(o.FieldPath),
		},
		"source":              c(source),
		"reportingController": c(ev.ReportingController),
		"firstTimestamp":      timestamp(first),
		"lastTimestamp":       timestamp(eventTime(ev)),
	}
	ns := o.Namespace
	if ns == "" {
		ns = ev.Namespace
	}
	return triggers.Event{Data: data, Key: c(ns) + "/" + c(o.Kind) + "/" + c(o.Name) + "/" + c(ev.Reason)}
}

// timestamp is t in RFC 3339, "" when unset.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
