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

package eventqueue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exagent-io/exagent/internal/eventqueue"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// control is started by the first test that needs it (env).
var control = &testenv.Lazy{}

func env() *testenv.Env { return control.Get() }

func TestMain(m *testing.M) { control.Main(m) }

func namespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("evq-%d", time.Now().UnixNano()%1_000_000_000)
	if err := env().Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func object(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := env().Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

func waitEvents(t *testing.T, ns string, n int) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := env().Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(list.Items) >= n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d Events in %s (%d): %v", n, ns, len(list.Items), err)
	}
	return list.Items
}

// Every recorded Event is written once, with what was recorded, and the
// queue keeps nothing afterwards (a repeat is a new Event, not a series).
func TestEventsAreWritten(t *testing.T) {
	ns := namespace(t)
	cm, rel := object(t, ns, "a"), object(t, ns, "b")
	q := eventqueue.New(env().Client, env().Scheme, logr.Discard(), eventqueue.Options{Instance: "test"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- q.Start(ctx) }()
	rec := q.Recorder("exagent-controller")
	long := strings.Repeat("é", 800) // 1,600 bytes: cut on a rune boundary
	for i := range 20 {
		rec.Eventf(cm, rel, corev1.EventTypeNormal, "RunPaused", "RunPaused", "paused %d", i)
	}
	rec.Eventf(cm, nil, corev1.EventTypeWarning, "RunFailed", "RunFailed", "%s", long)
	evs := waitEvents(t, ns, 21)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	notes := map[string]bool{}
	for _, e := range evs {
		if e.Regarding.Name != "a" || e.Regarding.Kind != "ConfigMap" || e.ReportingController != "exagent-controller" ||
			e.ReportingInstance != "exagent-controller-test" || e.Series != nil {
			t.Errorf("event %s: %+v", e.Name, e)
		}
		if e.Reason == "RunPaused" && (e.Related == nil || e.Related.Name != "b" || e.Type != corev1.EventTypeNormal) {
			t.Errorf("event %s: related %v type %s", e.Name, e.Related, e.Type)
		}
		if e.Reason == "RunFailed" && (len(e.Note) > 1024 || !strings.HasSuffix(e.Note, "…") || e.Type != corev1.EventTypeWarning) {
			t.Errorf("long note: %d bytes, %q…", len(e.Note), e.Note[:20])
		}
		notes[e.Note] = true
	}
	if len(evs) != 21 || len(notes) != 21 {
		t.Errorf("%d Events, %d distinct notes; want 21 each", len(evs), len(notes))
	}
}

// Events recorded while no worker runs wait in the queue up to its size
// (the rest are dropped and counted), the stop writes what waits, and an
// Event recorded after the stop is written at once.
func TestQueueBoundAndDrainAtStop(t *testing.T) {
	ns := namespace(t)
	cm := object(t, ns, "a")
	q := eventqueue.New(env().Client, env().Scheme, logr.Discard(), eventqueue.Options{QueueSize: 5, Instance: "test"})
	rec := q.Recorder("exagent-controller")
	full := testutil.ToFloat64(eventqueue.DroppedTotal("QueueFull"))
	for i := range 8 {
		rec.Eventf(cm, nil, corev1.EventTypeNormal, "RunPaused", "RunPaused", "paused %d", i)
	}
	if got := testutil.ToFloat64(eventqueue.DroppedTotal("QueueFull")) - full; got != 3 {
		t.Errorf("dropped %v Events as QueueFull; want 3", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stopped at once: only the drain writes
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if evs := waitEvents(t, ns, 5); len(evs) != 5 {
		t.Errorf("%d Events written; want the 5 queued", len(evs))
	}
	// After the stop no worker is left: an Event is written at once by
	// the one who records it, never dropped.
	stopped := testutil.ToFloat64(eventqueue.DroppedTotal("Stopped"))
	rec.Eventf(cm, nil, corev1.EventTypeNormal, "RunPaused", "RunPaused", "after the stop")
	if evs := waitEvents(t, ns, 6); len(evs) != 6 {
		t.Errorf("%d Events written; want the 5 queued and the one recorded after the stop", len(evs))
	}
	if got := testutil.ToFloat64(eventqueue.DroppedTotal("Stopped")) - stopped; got != 0 {
		t.Errorf("an Event after the stop: dropped %v as Stopped; want it written", got)
	}
}
