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
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Reading runs at scale: the plugin asks the apiserver for the runs it
// shows — a field selector on the AgentRun CRD's selectable fields
// (status.phase, spec.agentRef.name) — and reads them in pages, so a
// namespace of thousands of finished runs costs one small response, not
// all of them decoded by the plugin.

// listPageSize is the most runs one list request returns; the rest come
// with the continue token. It bounds the plugin's memory per page and the
// apiserver's work per request, as kubectl get's --chunk-size does.
const listPageSize = 500

// awaitingApproval selects the runs a human is asked about: only a run in
// phase AwaitingApproval has pending approvals (loop.Pause creates them
// with the phase; every way out of it decides or closes them), and a
// delegation tree's ancestors show AwaitingApproval while a descendant
// waits (docs/architecture.md §5), so the rows of a child keep their paths.
func awaitingApproval() fields.Selector {
	return fields.OneTermEqualSelector(exagentv1.FieldStatusPhase, string(exagentv1.PhaseAwaitingApproval))
}

// notEnded selects the runs that have not ended.
func notEnded() fields.Selector {
	var terms []fields.Selector
	for _, p := range []exagentv1.RunPhase{exagentv1.PhaseSucceeded, exagentv1.PhaseFailed,
		exagentv1.PhaseDenied, exagentv1.PhaseCancelled, exagentv1.PhaseExpired} {
		terms = append(terms, fields.OneTermNotEqualSelector(exagentv1.FieldStatusPhase, string(p)))
	}
	return fields.AndSelectors(terms...)
}

// withAgent narrows sel to the runs of agent ("" leaves sel as it is).
func withAgent(sel fields.Selector, agent string) fields.Selector {
	if agent == "" {
		return sel
	}
	byAgent := fields.OneTermEqualSelector(exagentv1.FieldAgentName, agent)
	if empty(sel) {
		return byAgent
	}
	return fields.AndSelectors(sel, byAgent)
}

func empty(sel fields.Selector) bool { return sel == nil || sel.Empty() }

// runLister reads runs by field selector, in pages. An AgentRun CRD
// installed before its selectable fields existed refuses the selector
// ("field label not supported"): the lister then reads every run and
// filters them itself, says so once on warn, and remembers it (unfiltered)
// so that a watch does not ask again.
type runLister struct {
	c    client.Reader
	warn io.Writer
	// unfiltered is set once the apiserver refused a field selector.
	unfiltered bool
}

// list calls fn with each page of the runs of namespace ns ("" is every
// namespace) that sel selects (nil: every run), in the apiserver's order,
// and returns the resourceVersion the pages were read at.
func (l *runLister) list(ctx context.Context, ns string, sel fields.Selector, fn func([]exagentv1.AgentRun) error) (string, error) {
	if !l.unfiltered {
		rv, err := l.pages(ctx, ns, sel, nil, fn)
		if err == nil || empty(sel) || !unsupportedSelector(err) {
			return rv, err
		}
		l.unfiltered = true
		if l.warn != nil {
			_, _ = fmt.Fprintf(l.warn, "warning: the installed AgentRun CRD has no selectable fields (%v): "+
				"reading every run instead; install this version's CRDs\n", err)
		}
	}
	return l.pages(ctx, ns, nil, sel, fn)
}

// all collects what list reads.
func (l *runLister) all(ctx context.Context, ns string, sel fields.Selector) ([]exagentv1.AgentRun, string, error) {
	var runs []exagentv1.AgentRun
	rv, err := l.list(ctx, ns, sel, func(page []exagentv1.AgentRun) error {
		runs = append(runs, page...)
		return nil
	})
	return runs, rv, err
}

// pages lists with server selects the apiserver evaluates and local the
// lister does (the fallback).
func (l *runLister) pages(ctx context.Context, ns string, server, local fields.Selector, fn func([]exagentv1.AgentRun) error) (string, error) {
	opts := []client.ListOption{client.Limit(listPageSize)}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if !empty(server) {
		opts = append(opts, client.MatchingFieldsSelector{Selector: server})
	}
	cont := ""
	for {
		var page exagentv1.AgentRunList
		if err := l.c.List(ctx, &page, append(opts, client.Continue(cont))...); err != nil {
			return "", err
		}
		items := page.Items
		if !empty(local) {
			items = items[:0]
			for i := range page.Items {
				if local.Matches(runFields(&page.Items[i])) {
					items = append(items, page.Items[i])
				}
			}
		}
		if err := fn(items); err != nil {
			return "", err
		}
		if cont = page.Continue; cont == "" {
			return page.ResourceVersion, nil
		}
	}
}

// unsupportedSelector reports the apiserver's refusal of a field label the
// CRD does not declare selectable.
func unsupportedSelector(err error) bool {
	return apierrors.IsBadRequest(err) && strings.Contains(err.Error(), "field label not supported")
}

// runFields are a run's selectable fields as the apiserver computes them
// (a missing value is the empty string), for the fallback filter.
func runFields(r *exagentv1.AgentRun) fields.Set {
	return fields.Set{
		"metadata.name":            r.Name,
		"metadata.namespace":       r.Namespace,
		exagentv1.FieldStatusPhase: string(r.Status.Phase),
		exagentv1.FieldAgentName:   r.Spec.AgentRef.Name,
	}
}
