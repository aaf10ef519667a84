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

package triggers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/exagent-io/exagent/internal/trigger"
)

// Kind is where a trigger's events come from.
type Kind string

const (
	// Webhook: one event per delivery, its JSON body.
	Webhook Kind = "webhook"
	// Alertmanager: one event per firing alert of a notification.
	Alertmanager Kind = "alertmanager"
	// KubernetesEvents: one event per matching Kubernetes Event, watched
	// by the manager (never delivered to the listener).
	KubernetesEvents Kind = "kubernetesEvents"
)

// Defaults and bounds of the listener.
const (
	DefaultMaxBody = 64 << 10
	// MaxInput bounds a rendered input (a run's spec.input).
	MaxInput = 32 << 10
	// maxKey bounds a rendered dedup key.
	maxKey = 1024
	// maxReplays bounds the delivery ids remembered per trigger.
	maxReplays = 10_000
	// maxKeys bounds the dedup keys remembered per trigger.
	maxKeys = 10_000
	// maxTriggers bounds the triggers whose windows are kept in memory.
	maxTriggers = 4096
)

// Trigger is what the listener needs of an AgentTrigger.
type Trigger struct {
	types.NamespacedName
	// Generation of the trigger: a changed spec starts its windows afresh.
	Generation int64
	Kind       Kind
	// SigningSecret (Standard Webhooks) or BearerToken authenticates a
	// delivery; exactly one is set.
	SigningSecret, BearerToken string
	// MaxBody bounds a delivery's body (DefaultMaxBody when 0).
	MaxBody int64
	// Resolved: an Alertmanager trigger makes runs of resolved alerts too.
	Resolved bool
	// Input renders a run's input from an event; DedupKey its key (nil:
	// the delivery's id, or the alert's fingerprint).
	Input, DedupKey *trigger.Expr
	// DedupWindow: one run per key per window.
	DedupWindow time.Duration
	// MaxRunsPerHour bounds the runs it makes (0: no bound).
	MaxRunsPerHour int
	// MaxConcurrentRuns bounds its runs that have not ended (0: no bound).
	MaxConcurrentRuns int
	// Suspend: deliveries are authenticated and answered, and make no run.
	Suspend bool
}

// ErrNotFound: no such trigger (404).
var ErrNotFound = errors.New("no such trigger")

// ErrNameTaken: the name of the run an event's key makes is taken by a
// run the trigger did not make (409: a retry would meet it again).
var ErrNameTaken = errors.New("the run's name is taken")

// Lookup reads a trigger's configuration (and its secret).
type Lookup interface {
	Trigger(ctx context.Context, key types.NamespacedName) (*Trigger, error)
}

// Creator creates a run of t for an event, named from t, key and the
// window it falls in: created is false when that run exists already.
type Creator interface {
	CreateRun(ctx context.Context, t *Trigger, input, key string, at time.Time) (name string, created bool, err error)
}

// ActiveCounter is implemented by a Creator that can count a trigger's
// runs that have not ended (spec.maxConcurrentRuns).
type ActiveCounter interface {
	ActiveRuns(ctx context.Context, t *Trigger) (int, error)
}

// Refresher is implemented by a Lookup that keeps secrets: Refresh
// forgets a trigger's kept secrets (when read long enough ago) and reports
// whether it did, so a delivery signed with a rotated secret is checked
// against a fresh read once.
type Refresher interface {
	Refresh(key types.NamespacedName) bool
}

// Outcome is what became of one event.
type Outcome string

const (
	// OutcomeRun: the event made a run.
	OutcomeRun Outcome = "run"
	// OutcomeDuplicate: its key made a run within the window.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeRateLimited: past maxRunsPerHour, dropped.
	OutcomeRateLimited Outcome = "rate_limited"
	// OutcomeOverConcurrency: past maxConcurrentRuns, dropped.
	OutcomeOverConcurrency Outcome = "over_concurrency"
	// OutcomeSuspended: the trigger is suspended, dropped.
	OutcomeSuspended Outcome = "suspended"
)

// Recorder is told what became of each trigger's events (the trigger's
// status counts, Events and metrics); nil records nothing.
type Recorder interface {
	Record(t types.NamespacedName, counts map[Outcome]int, lastRun string, at time.Time)
}

// Result is the listener's answer to a delivery.
type Result struct {
	// Runs are the runs the delivery made.
	Runs []string `json:"runs,omitempty"`
	// Duplicates are events whose key made a run within the window.
	Duplicates int `json:"duplicates,omitempty"`
	// RateLimited are events past maxRunsPerHour: counted, dropped.
	RateLimited int `json:"rateLimited,omitempty"`
	// OverConcurrency are events past maxConcurrentRuns: counted, dropped.
	OverConcurrency int `json:"overConcurrency,omitempty"`
	// Suspended: the trigger is suspended and made no run.
	Suspended bool `json:"suspended,omitempty"`
	// SuspendedEvents are the events received while suspended: dropped.
	SuspendedEvents int `json:"suspendedEvents,omitempty"`
}

// Handler serves POST /triggers/NAMESPACE/NAME.
type Handler struct {
	Lookup  Lookup
	Creator Creator
	// Recorder, when set, is told each delivery's outcomes.
	Recorder Recorder
	Clock    clock.PassiveClock
	Log      logr.Logger

	mu    sync.Mutex
	state map[types.NamespacedName]*state
	order []types.NamespacedName
}

// state is what the listener remembers of one trigger's generation.
type state struct {
	generation int64
	replays    *trigger.Window
	keys       *trigger.Window
	rate       *trigger.Rate
}

// ServeHTTP authenticates a delivery, turns it into events and each
// event into a run, once per dedup key per window.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	key, ok := parsePath(r.URL.Path)
	if !ok {
		http.Error(w, "want /triggers/NAMESPACE/NAME", http.StatusNotFound)
		return
	}
	t, err := h.Lookup.Trigger(r.Context(), key)
	switch {
	case errors.Is(err, ErrNotFound):
		http.Error(w, "no such trigger", http.StatusNotFound)
		return
	case err != nil:
		h.Log.Error(err, "reading a trigger", "trigger", key)
		http.Error(w, "the trigger cannot be read now; retry", http.StatusServiceUnavailable)
		return
	case t.Kind == KubernetesEvents:
		http.Error(w, "this trigger reads Kubernetes Events and takes no deliveries", http.StatusNotFound)
		return
	}
	limit := t.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, fmt.Sprintf("the body is larger than %d bytes", limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the body failed", http.StatusBadRequest)
		return
	}
	now := h.clock().Now()
	delivery, err := authenticate(t, body, r.Header, now)
	if err != nil {
		if rf, ok := h.Lookup.(Refresher); ok && rf.Refresh(key) {
			if fresh, ferr := h.Lookup.Trigger(r.Context(), key); ferr == nil {
				t = fresh
				delivery, err = authenticate(t, body, r.Header, now)
			}
		}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	events, err := eventsOf(t, body, delivery)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res, status, err := h.Deliver(r.Context(), t, delivery, events, now)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(res)
}

// Event is one event of a delivery and its default dedup key.
type Event struct {
	// Data is what the expressions see as the variable event.
	Data any
	// Key is the dedup key when the trigger has no spec.dedupKey.
	Key string
}

// authenticate checks the delivery's signature or bearer token; the
// delivery id is the signature's webhook-id ("" with a bearer token).
func authenticate(t *Trigger, body []byte, h http.Header, now time.Time) (string, error) {
	if t.SigningSecret != "" {
		return trigger.VerifySignature(t.SigningSecret, body, h, now)
	}
	if err := trigger.VerifyBearer(t.BearerToken, h); err != nil {
		return "", err
	}
	return h.Get("webhook-id"), nil
}

// eventsOf parses a delivery into its events.
func eventsOf(t *Trigger, body []byte, delivery string) ([]Event, error) {
	if t.Kind == Alertmanager {
		alerts, err := trigger.Alerts(body, t.Resolved)
		if err != nil {
			return nil, err
		}
		out := make([]Event, 0, len(alerts))
		for _, a := range alerts {
			out = append(out, Event{Data: a.Event(), Key: a.Fingerprint})
		}
		return out, nil
	}
	var data any
	if err := json.Unmarshal(body, &data); err != nil {
		return nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	return []Event{{Data: data, Key: delivery}}, nil
}

// Deliver makes the runs of a delivery's events (delivery is its id for
// replays, "" when it has none): each event's input and key rendered, then
// deduplicated, rate-limited and created. The status is the HTTP status
// the listener answers; a source that is not HTTP (Kubernetes Events)
// reads it as: 2xx done, 4xx the event is bad, 5xx retry.
func (h *Handler) Deliver(ctx context.Context, t *Trigger, delivery string, events []Event, now time.Time) (Result, int, error) {
	var res Result
	type due struct{ input, key string }
	var runs []due
	for _, ev := range events {
		input, err := t.Input.Render(ctx, ev.Data, MaxInput)
		if err != nil {
			return res, http.StatusBadRequest, fmt.Errorf("spec.input: %w", err)
		}
		key := ev.Key
		if t.DedupKey != nil {
			if key, err = t.DedupKey.Render(ctx, ev.Data, maxKey); err != nil {
				return res, http.StatusBadRequest, fmt.Errorf("spec.dedupKey: %w", err)
			}
		}
		runs = append(runs, due{input, key})
	}
	// The runs the trigger may still have in flight: counted before the
	// lock (a read of the cache), so two deliveries at once may each see
	// the same room — the bound is as good as the count is fresh.
	room := -1
	if t.MaxConcurrentRuns > 0 && !t.Suspend {
		ac, ok := h.Creator.(ActiveCounter)
		if !ok {
			return res, http.StatusInternalServerError, errors.New("maxConcurrentRuns is set but the listener cannot count runs")
		}
		active, err := ac.ActiveRuns(ctx, t)
		if err != nil {
			h.Log.Error(err, "counting a trigger's runs", "trigger", t.NamespacedName)
			return res, http.StatusServiceUnavailable, fmt.Errorf("counting the trigger's runs failed; retry: %w", err)
		}
		room = max(t.MaxConcurrentRuns-active, 0)
	}
	h.mu.Lock()
	st := h.stateOf(t)
	if delivery != "" && !st.replays.First(delivery, now) {
		h.mu.Unlock()
		return res, http.StatusConflict, fmt.Errorf("delivery %s was received before: a replay makes no run", delivery)
	}
	var admitted []due
	for _, d := range runs {
		switch {
		case t.Suspend:
			res.Suspended = true
			res.SuspendedEvents++
		case d.key != "" && !st.keys.First(d.key, now):
			res.Duplicates++
		case room == 0:
			// Forgotten: the key made no run, so the next event of it,
			// once a run ended, may make one.
			st.keys.Forget(d.key)
			res.OverConcurrency++
		case t.MaxRunsPerHour > 0 && !st.rate.Allow(now):
			st.keys.Forget(d.key)
			res.RateLimited++
		default:
			if room > 0 {
				room--
			}
			admitted = append(admitted, d)
		}
	}
	h.mu.Unlock()
	defer func() { h.record(t, len(events), res, now) }()
	for i, d := range admitted {
		name, created, err := h.Creator.CreateRun(ctx, t, d.input, d.key, now)
		if err != nil {
			// The sender retries under the same delivery id: forget it, and
			// the keys that made no run yet, so the retry is not taken for a
			// replay or a duplicate (the runs already made are found by
			// name). The rate's slots stay taken: a retry storm never
			// passes maxRunsPerHour.
			h.mu.Lock()
			if delivery != "" {
				st.replays.Forget(delivery)
			}
			for _, left := range admitted[i:] {
				st.keys.Forget(left.key)
			}
			h.mu.Unlock()
			h.Log.Error(err, "creating a triggered run", "trigger", t.NamespacedName, "key", d.key)
			if errors.Is(err, ErrNameTaken) {
				return res, http.StatusConflict, err
			}
			return res, http.StatusServiceUnavailable, fmt.Errorf("creating the run failed; retry: %w", err)
		}
		if created {
			res.Runs = append(res.Runs, name)
		} else {
			res.Duplicates++
		}
	}
	if len(res.Runs) > 0 {
		return res, http.StatusCreated, nil
	}
	return res, http.StatusOK, nil
}

// record tells the Recorder what became of a delivery's events.
func (h *Handler) record(t *Trigger, events int, res Result, now time.Time) {
	if h.Recorder == nil || events == 0 {
		return
	}
	counts := map[Outcome]int{OutcomeRun: len(res.Runs), OutcomeDuplicate: res.Duplicates,
		OutcomeRateLimited: res.RateLimited, OutcomeOverConcurrency: res.OverConcurrency}
	if res.Suspended {
		counts[OutcomeSuspended] = res.SuspendedEvents
	}
	last := ""
	if len(res.Runs) > 0 {
		last = res.Runs[len(res.Runs)-1]
	}
	h.Recorder.Record(t.NamespacedName, counts, last, now)
}

// stateOf is t's windows (new for a new generation), bounded to
// maxTriggers triggers. The caller holds h.mu.
func (h *Handler) stateOf(t *Trigger) *state {
	if h.state == nil {
		h.state = map[types.NamespacedName]*state{}
	}
	if s, ok := h.state[t.NamespacedName]; ok && s.generation == t.Generation {
		return s
	}
	window := t.DedupWindow
	if window <= 0 {
		window = time.Minute
	}
	if _, ok := h.state[t.NamespacedName]; !ok {
		h.order = append(h.order, t.NamespacedName)
	}
	s := &state{generation: t.Generation, replays: trigger.NewWindow(trigger.Tolerance*2, maxReplays),
		keys: trigger.NewWindow(window, maxKeys), rate: trigger.NewRate(t.MaxRunsPerHour, time.Hour)}
	h.state[t.NamespacedName] = s
	for len(h.order) > maxTriggers {
		delete(h.state, h.order[0])
		h.order = h.order[1:]
	}
	return s
}

func (h *Handler) clock() clock.PassiveClock {
	if h.Clock == nil {
		return clock.RealClock{}
	}
	return h.Clock
}

// parsePath reads /triggers/NAMESPACE/NAME.
func parsePath(p string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(p, "/triggers/")
	if !ok {
		return types.NamespacedName{}, false
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") || len(ns) > 63 || len(name) > 253 {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}
