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
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestEventFilter: one value per selector goes to the apiserver as a
// field selector (escaped: the trigger's author writes it), several are
// checked client side, and matches checks all of them either way.
func TestEventFilter(t *testing.T) {
	src := &exagentv1.KubernetesEventsTriggerSource{Reasons: []string{"BackOff"}, Types: []exagentv1.EventType{"Warning", "Normal"},
		InvolvedObject: &exagentv1.InvolvedObjectSelector{Kinds: []string{"Pod", "Job"}, Name: "web,reason=Other"}}
	f := newEventFilter(src)
	if got, want := f.fieldSelector(), `reason=BackOff,involvedObject.name=web\,reason\=Other`; got != want {
		t.Errorf("fieldSelector = %q, want %q", got, want)
	}
	if got := newEventFilter(&exagentv1.KubernetesEventsTriggerSource{}).fieldSelector(); got != "" {
		t.Errorf("no selectors: fieldSelector = %q", got)
	}
	ev := func(reason, typ, kind, name string) *corev1.Event {
		return &corev1.Event{Reason: reason, Type: typ, InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}}
	}
	for _, tc := range []struct {
		ev   *corev1.Event
		want bool
	}{
		{ev("BackOff", "Warning", "Job", "web,reason=Other"), true},
		{ev("BackOff", "Normal", "Pod", "web,reason=Other"), true},
		{ev("Pulled", "Warning", "Pod", "web,reason=Other"), false},
		{ev("BackOff", "Warning", "Deployment", "web,reason=Other"), false},
		{ev("BackOff", "Warning", "Pod", "web"), false},
	} {
		if got := f.matches(tc.ev); got != tc.want {
			t.Errorf("matches(%+v) = %v, want %v", tc.ev, got, tc.want)
		}
	}
}

// TestTriggerEvent: the event variable holds the Event's fields and the
// involved object, every string clipped (the message to 4 KiB, on a
// rune boundary), and the default key is namespace/kind/name/reason.
func TestTriggerEvent(t *testing.T) {
	first := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1.17a", Namespace: "shop"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-1", UID: "u-1", APIVersion: "v1",
			FieldPath: "spec.containers{app}"},
		Reason: "BackOff", Type: "Warning", Message: strings.Repeat("é", 5000), Count: 7,
		FirstTimestamp: metav1.NewTime(first), LastTimestamp: metav1.NewTime(first.Add(time.Minute)),
		Source: corev1.EventSource{Component: "kubelet"}, ReportingController: strings.Repeat("x", 2000),
	}
	got := triggerEvent(ev)
	if got.Key != "shop/Pod/web-1/BackOff" {
		t.Errorf("key %q", got.Key)
	}
	d := got.Data.(map[string]any)
	msg := d["message"].(string)
	if len(msg) > maxEventMessage || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "…") {
		t.Errorf("the message is %d bytes (valid UTF-8 %v), want at most %d, marked cut", len(msg), utf8.ValidString(msg), maxEventMessage)
	}
	if rc := d["reportingController"].(string); len(rc) > maxEventField {
		t.Errorf("reportingController is %d bytes, want at most %d", len(rc), maxEventField)
	}
	o := d["involvedObject"].(map[string]any)
	if o["kind"] != "Pod" || o["name"] != "web-1" || o["uid"] != "u-1" || o["namespace"] != "shop" || o["fieldPath"] != "spec.containers{app}" ||
		d["count"] != int64(7) || d["source"] != "kubelet" || d["reason"] != "BackOff" || d["type"] != "Warning" ||
		d["firstTimestamp"] != "2026-03-01T10:00:00Z" || d["lastTimestamp"] != "2026-03-01T10:01:00Z" {
		t.Errorf("event = %v", d)
	}
}

// TestStartCutoff: a watch starting takes the Events since the trigger's
// last event, else since its start less the grace — never from before
// the trigger was created.
func TestStartCutoff(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(created time.Time, last *time.Time) *exagentv1.AgentTrigger {
		a := &exagentv1.AgentTrigger{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
		if last != nil {
			a.Status.LastEventTime = &metav1.Time{Time: *last}
		}
		return a
	}
	hourAgo := now.Add(-time.Hour)
	for name, tc := range map[string]struct {
		at   *exagentv1.AgentTrigger
		mem  time.Time
		want time.Time
	}{
		"new trigger":          {at: at(now.Add(-time.Second), nil), want: now.Add(-time.Second)},
		"old trigger, no last": {at: at(now.Add(-48*time.Hour), nil), want: now.Add(-startGrace)},
		"status last event":    {at: at(now.Add(-48*time.Hour), &hourAgo), want: hourAgo},
		"memory is newer":      {at: at(now.Add(-48*time.Hour), &hourAgo), mem: now.Add(-time.Minute), want: now.Add(-time.Minute)},
	} {
		if got := startCutoff(tc.at, tc.mem, now); !got.Equal(tc.want) {
			t.Errorf("%s: cutoff %v, want %v", name, got, tc.want)
		}
	}
}
