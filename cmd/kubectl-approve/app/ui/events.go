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

package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// keepAlive is how often an idle event stream sends a comment, so that
// proxies keep it open; it carries nothing and asks nothing.
const keepAlive = 25 * time.Second

// events is the inbox's live stream (server-sent events): a watch of the
// scope's runs with the person's own credentials, from the resourceVersion
// the page was rendered at (or the stream's last event id, when the
// browser reconnects). Each change is one event: "upsert" with a row
// rendered by the same template as the page, "remove" when a run stops
// waiting for an approval, "reset" with the whole list after the watch
// fell behind the apiserver's history and was listed again. No polling.
func (s *Server) events(q *request) {
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		refuse(q.w, http.StatusServiceUnavailable, fmt.Sprintf("Too many open pages (%d): close some and reload.", maxStreams))
		return
	}
	fl, ok := q.w.(http.Flusher)
	if !ok {
		refuse(q.w, http.StatusInternalServerError, "streaming is not supported by this connection")
		return
	}
	since := q.r.Header.Get("Last-Event-ID")
	if since == "" {
		since = q.r.URL.Query().Get("since")
	}
	h := q.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	q.w.WriteHeader(http.StatusOK)
	st := &stream{s: s, q: q, fl: fl, shown: map[string][]string{}, agents: map[client.ObjectKey]*exagentv1.Agent{}}
	ctx := q.r.Context()
	for ctx.Err() == nil {
		if since == "" {
			rv, err := st.reset(ctx)
			if err != nil {
				st.fail(err)
				return
			}
			since = rv
		}
		err := st.follow(ctx, since)
		if ctx.Err() != nil {
			return
		}
		if !apierrors.IsGone(err) && !apierrors.IsResourceExpired(err) {
			st.fail(err)
			return
		}
		since = "" // fell behind: list again
	}
}

// stream is one open event stream: the rows it has shown, by run.
type stream struct {
	s      *Server
	q      *request
	fl     http.Flusher
	shown  map[string][]string
	agents map[client.ObjectKey]*exagentv1.Agent
}

type rowEvent struct {
	Key  string `json:"key"`
	Run  string `json:"run,omitempty"`
	HTML string `json:"html,omitempty"`
}

func (st *stream) send(event, id string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if id != "" {
		if _, err := fmt.Fprintf(st.q.w, "id: %s\n", id); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(st.q.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return err
	}
	st.fl.Flush()
	return nil
}

// fail tells the page why the stream ends (it reconnects by itself).
func (st *stream) fail(err error) {
	_ = st.send("problem", "", map[string]string{"message": st.s.cfg.explain(err)})
}

// reset lists the scope and sends every row at once.
func (st *stream) reset(ctx context.Context) (string, error) {
	runs, rv, err := st.s.listRuns(ctx, st.q.c)
	if err != nil {
		return "", err
	}
	st.agents = st.s.agents(ctx, st.q.c)
	st.shown = map[string][]string{}
	var rows []inboxRow
	for i := range runs {
		r := st.rows(ctx, &runs[i])
		st.remember(&runs[i], r)
		rows = append(rows, r...)
	}
	sortRows(rows)
	var html string
	for _, r := range rows {
		frag, err := st.s.pages.fragment("inbox", "row", r)
		if err != nil {
			return "", err
		}
		html += frag
	}
	return rv, st.send("reset", rv, rowEvent{HTML: html})
}

func (st *stream) rows(ctx context.Context, run *exagentv1.AgentRun) []inboxRow {
	key := client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.AgentRef.Name}
	agent, ok := st.agents[key]
	if !ok && run.Status.Phase == exagentv1.PhaseAwaitingApproval {
		agent = &exagentv1.Agent{}
		if err := st.q.c.Get(ctx, key, agent); err != nil {
			agent = nil
		}
		st.agents[key] = agent
	}
	return rowsOf(run, agent)
}

func (st *stream) remember(run *exagentv1.AgentRun, rows []inboxRow) {
	keys := make([]string, 0, len(rows))
	for _, r := range rows {
		keys = append(keys, r.Key)
	}
	if len(keys) == 0 {
		delete(st.shown, runKey(run.Namespace, run.Name))
		return
	}
	st.shown[runKey(run.Namespace, run.Name)] = keys
}

// follow sends the changes from since until the watch fails.
func (st *stream) follow(ctx context.Context, since string) error {
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		opts := append(st.s.listOpts(), &client.ListOptions{Raw: &o})
		return st.q.c.Watch(ctx, &exagentv1.AgentRunList{}, opts...)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, since, lw)
	if err != nil {
		return fmt.Errorf("watching runs: %w", err)
	}
	defer w.Stop()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if _, err := fmt.Fprint(st.q.w, ": keep-alive\n\n"); err != nil {
				return err
			}
			st.fl.Flush()
			continue
		case e, ok := <-w.ResultChan():
			if !ok {
				return errors.New("the watch of runs ended")
			}
			ev = e
		}
		if ev.Type == watch.Error {
			return apierrors.FromObject(ev.Object)
		}
		run, ok := ev.Object.(*exagentv1.AgentRun)
		if !ok {
			continue
		}
		if err := st.apply(ctx, ev.Type, run); err != nil {
			return err
		}
	}
}

// apply sends what one event changed in the inbox.
func (st *stream) apply(ctx context.Context, t watch.EventType, run *exagentv1.AgentRun) error {
	var rows []inboxRow
	if t != watch.Deleted {
		rows = st.rows(ctx, run)
	}
	rk := runKey(run.Namespace, run.Name)
	before := st.shown[rk]
	st.remember(run, rows)
	rv := run.ResourceVersion
	now := map[string]bool{}
	for _, r := range rows {
		now[r.Key] = true
		html, err := st.s.pages.fragment("inbox", "row", r)
		if err != nil {
			return err
		}
		if err := st.send("upsert", rv, rowEvent{Key: r.Key, Run: rk, HTML: html}); err != nil {
			return err
		}
	}
	for _, k := range before {
		if !now[k] {
			if err := st.send("remove", rv, rowEvent{Key: k, Run: rk}); err != nil {
				return err
			}
		}
	}
	if len(rows) == 0 && len(before) == 0 {
		// Nothing shown changed; the id still moves, so a reconnect
		// resumes after this event.
		_, err := fmt.Fprintf(st.q.w, "id: %s\n\n", rv)
		st.fl.Flush()
		return err
	}
	return nil
}
