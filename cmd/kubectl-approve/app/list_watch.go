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
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// watch is `list -w`: it prints the approvals listed, then watches the
// same selection from the list's resourceVersion and prints each approval
// once, when its run starts waiting for it — as `kubectl get -w` does,
// never polling. A watch the apiserver closes is resumed; one that fell
// behind the apiserver's history (410 Gone) lists again and goes on from
// there, printing only what is new. It returns when ctx ends.
func (o *listOptions) watch(ctx context.Context, segments *segmentReader, runs []exagentv1.AgentRun, rows []pendingApproval, rv string) error {
	s := &approvalStream{o: o, printed: map[string]bool{}}
	s.reset(runs)
	if err := s.emit(rows); err != nil {
		return err
	}
	for {
		err := o.follow(ctx, segments, s, rv)
		if ctx.Err() != nil {
			return nil // interrupted, like kubectl get -w
		}
		if !apierrors.IsGone(err) && !apierrors.IsResourceExpired(err) {
			return err
		}
		if runs, rv, err = o.runs.all(ctx, o.namespace, o.selector()); err != nil {
			return fmt.Errorf("listing runs again after the watch expired: %w", err)
		}
		s.reset(runs)
		if err := s.emit(o.rows(ctx, segments, runs, runs)); err != nil {
			return err
		}
	}
}

// follow applies the watch events from rv to s until the watch fails or
// ctx ends.
func (o *listOptions) follow(ctx context.Context, segments *segmentReader, s *approvalStream, rv string) error {
	sel := o.selector()
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		lo := &client.ListOptions{Namespace: o.namespace, Raw: &opts}
		if !o.runs.unfiltered {
			lo.FieldSelector = sel
		}
		return o.client.Watch(ctx, &exagentv1.AgentRunList{}, lo)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		return fmt.Errorf("watching runs: %w", err)
	}
	defer w.Stop()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return errors.New("the watch of runs ended")
		}
		switch ev.Type {
		case watch.Error:
			return fmt.Errorf("watching runs: %w", apierrors.FromObject(ev.Object))
		case watch.Deleted:
			if run, ok := ev.Object.(*exagentv1.AgentRun); ok {
				s.forget(run) // ended its wait (or, unfiltered, gone)
			}
		case watch.Added, watch.Modified:
			run, ok := ev.Object.(*exagentv1.AgentRun)
			if !ok {
				continue
			}
			if o.runs.unfiltered && !sel.Matches(runFields(run)) {
				s.forget(run)
				continue
			}
			s.remember(run)
			if err := s.emit(o.rows(ctx, segments, []exagentv1.AgentRun{*run}, s.known())); err != nil {
				return err
			}
		}
	}
}

// approvalStream is what `list -w` has printed and the waiting runs it
// knows (for the paths of delegated runs' rows).
type approvalStream struct {
	o      *listOptions
	header bool
	// cols are the optional columns of the header printed: later rows
	// keep them, so the table stays aligned.
	cols    tableColumns
	printed map[string]bool
	runs    map[client.ObjectKey]exagentv1.AgentRun
}

func (s *approvalStream) reset(runs []exagentv1.AgentRun) {
	s.runs = map[client.ObjectKey]exagentv1.AgentRun{}
	for i := range runs {
		s.remember(&runs[i])
	}
}

func (s *approvalStream) remember(run *exagentv1.AgentRun) {
	s.runs[client.ObjectKeyFromObject(run)] = *run
}

func (s *approvalStream) forget(run *exagentv1.AgentRun) {
	delete(s.runs, client.ObjectKeyFromObject(run))
}

func (s *approvalStream) known() []exagentv1.AgentRun {
	out := make([]exagentv1.AgentRun, 0, len(s.runs))
	for _, r := range s.runs {
		out = append(out, r)
	}
	return out
}

// emit prints the rows not printed before: table rows under one header
// (printed with the first row), or one JSON or YAML document per approval.
func (s *approvalStream) emit(rows []pendingApproval) error {
	var fresh []pendingApproval
	for _, r := range rows {
		// The payload hash binds the run's UID: a run re-created under the
		// same name asks again.
		key := r.Namespace + "/" + r.Run + "/" + r.Approval + "/" + r.PayloadHash
		if !s.printed[key] {
			s.printed[key] = true
			fresh = append(fresh, r)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	switch s.o.Output {
	case "json":
		for _, r := range fresh {
			b, err := json.MarshalIndent(r, "", "    ")
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintln(s.o.Out, string(b)); err != nil {
				return err
			}
		}
		return nil
	case "yaml":
		for _, r := range fresh {
			b, err := yaml.Marshal(r)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(s.o.Out, "---\n%s", b); err != nil {
				return err
			}
		}
		return nil
	}
	header := !s.header
	if header {
		s.header, s.cols = true, columnsOf(fresh)
	}
	return writeApprovalTable(s.o.Out, fresh, s.o.clock.Now(), s.o.Output == "wide", header, s.cols)
}
