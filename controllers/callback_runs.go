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
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/callbacks"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// indexRunUID indexes AgentRuns by UID: a callback URL names the run by
// namespace and UID (a name could be reused by another run), and the
// listener must not list a namespace's runs to find one.
const indexRunUID = "exagent.io/run-uid"

// callbackCommitTries bounds the compare-and-swap retries of one POST:
// the run's owner may be committing at the same time.
const callbackCommitTries = 4

// CallbackRuns is the callback listener's view of the runs
// (callbacks.Deliverer): it finds a run by namespace and UID, applies
// loop.DeliverCallback to its status read past the cache, and commits by
// compare-and-swap through the Store, as every status write is. A run
// whose callback wait it closes is Queued: the run controller's watch
// sees the write and its claim sends the next model request.
type CallbackRuns struct {
	Client    client.Client // the cache: the UID index
	APIReader client.Reader
	// Sharded: the cache holds one shard's runs; a run not there is
	// looked for past it (nameOf).
	Sharded  bool
	Store    *store.Store
	Steps    *store.CommitSteps
	Segments *store.Segments
	Clock    clock.PassiveClock
	Env      envConfig
}

// setupCallbackIndex registers the UID index the listener finds runs by.
func setupCallbackIndex(ctx context.Context, mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &exagentv1.AgentRun{}, indexRunUID, func(o client.Object) []string {
		// Only the runs a POST can reach: a callback made, the run not
		// ended (an ended run's POST is a 404 either way). The others cost
		// the cache no index entry.
		if run := o.(*exagentv1.AgentRun); len(run.Status.Callbacks) > 0 && !run.Status.Phase.IsTerminal() {
			return []string{string(o.GetUID())}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing runs by UID: %w", err)
	}
	return nil
}

// Deliver applies body to callback id of the run; see callbacks.Deliverer.
func (c *CallbackRuns) Deliver(ctx context.Context, namespace, runUID, id string, body []byte) error {
	for range callbackCommitTries {
		run, err := c.find(ctx, namespace, runUID)
		if err != nil {
			return err
		}
		agent := &exagentv1.Agent{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: run.Spec.AgentRef.Name}, agent); err != nil {
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("reading the run's Agent: %w", err)
			}
			agent = nil // what DeliverCallback reads is the run's own
		}
		env, err := c.Env.env(run, agent, envExtras{})
		if err != nil {
			return fmt.Errorf("the run's configuration: %w", err)
		}
		status, err := c.hydrate(ctx, run, id)
		if err != nil {
			return err
		}
		now := c.Clock.Now()
		next, err := loop.DeliverCallback(status, env, id, body, now)
		if err != nil {
			return err
		}
		_, err = c.Store.Commit(ctx, store.Write{Run: run, Status: next, Now: now, Steps: c.Steps.All(c.Steps.AgentSinks(ctx, run))})
		if apierrorsIsConflict(err) {
			continue // the owner or another POST wrote first: decide again on the fresh run
		}
		if err != nil {
			return fmt.Errorf("committing the callback to run %s/%s: %w", namespace, run.Name, err)
		}
		return nil
	}
	return callbacks.ErrBusy
}

// find reads the run of namespace and UID past the cache (the cache may
// hold only a summary of a waiting run, store.CacheOptions).
func (c *CallbackRuns) find(ctx context.Context, namespace, runUID string) (*exagentv1.AgentRun, error) {
	var list exagentv1.AgentRunList
	if err := c.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{indexRunUID: runUID}); err != nil {
		return nil, fmt.Errorf("finding run %s in %s: %w", runUID, namespace, err)
	}
	name := ""
	if len(list.Items) > 0 {
		name = list.Items[0].Name
	} else if c.Sharded {
		// Another shard's run: the callback's URL reached this replica.
		var err error
		if name, err = c.nameOf(ctx, namespace, runUID); err != nil || name == "" {
			return nil, err
		}
	} else {
		return nil, callbacks.ErrNoRun
	}
	run := &exagentv1.AgentRun{}
	if err := c.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, run); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, callbacks.ErrNoRun
		}
		return nil, fmt.Errorf("reading run %s/%s: %w", namespace, name, err)
	}
	if string(run.UID) != runUID {
		return nil, callbacks.ErrNoRun // deleted and made again under the name
	}
	return run, nil
}

// hydrate puts back inline the arguments of the call that waits on
// callback id when they were sealed into a segment: its schema is in them.
func (c *CallbackRuns) hydrate(ctx context.Context, run *exagentv1.AgentRun, id string) (loop.Status, error) {
	st := *run.Status.DeepCopy()
	for i := range st.Calls {
		call := &st.Calls[i]
		if call.Wait == nil || call.Wait.Callback != id || call.ArgsRef == nil || call.Args != "" {
			continue
		}
		if c.Segments == nil {
			return st, errors.New("the waiting call's arguments are sealed and no segment store is configured")
		}
		chain, err := c.Segments.Chain(ctx, run)
		if err != nil {
			return st, fmt.Errorf("reading the run's segments: %w", err)
		}
		v, err := segment.ValuesOf(chain).Resolve(call.ArgsRef)
		if err != nil {
			return st, fmt.Errorf("call %s: %w", call.ID, err)
		}
		call.Args = v
	}
	return st, nil
}

// callbackIssuer is the engine's maker of callback URLs: nil unless the
// manager serves callbacks (a base URL) and holds a signing key.
func callbackIssuer(o Options) *loop.CallbackIssuer {
	if o.CallbackBaseURL == "" || o.Signer == nil {
		return nil
	}
	return &loop.CallbackIssuer{BaseURL: o.CallbackBaseURL, Token: o.Signer.CallbackToken}
}

// setupCallbacks builds the callback listener's handler, nil when the
// manager makes no callback URLs.
func setupCallbacks(ctx context.Context, mgr ctrl.Manager, o Options, runs *AgentRunReconciler) (*callbacks.Handler, error) {
	if runs.Callbacks == nil {
		return nil, nil
	}
	if err := setupCallbackIndex(ctx, mgr); err != nil {
		return nil, err
	}
	cr := &CallbackRuns{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Sharded: o.Shard.Sharded(), Store: runs.Store, Steps: runs.Steps,
		Segments: runs.Segments, Clock: runs.Clock, Env: runs.envConfig()}
	var tokens callbacks.Tokens = o.Signer
	return &callbacks.Handler{Tokens: tokens, Runs: cr, Clock: runs.Clock, Log: ctrl.Log.WithName("callbacks")}, nil
}

var _ callbacks.Tokens = (*authz.Signer)(nil)

// nameOf finds the run of namespace with uid past the cache, reading only
// the runs' metadata; ErrNoRun when there is none.
func (c *CallbackRuns) nameOf(ctx context.Context, namespace, uid string) (string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRunList"))
	opts := &client.ListOptions{Namespace: namespace, Limit: 500}
	for {
		if err := c.APIReader.List(ctx, list, opts); err != nil {
			return "", fmt.Errorf("finding run %s in %s: %w", uid, namespace, err)
		}
		for i := range list.Items {
			if string(list.Items[i].UID) == uid {
				return list.Items[i].Name, nil
			}
		}
		if list.Continue == "" {
			return "", callbacks.ErrNoRun
		}
		opts.Continue = list.Continue
	}
}
