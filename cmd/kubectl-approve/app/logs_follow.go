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
	"errors"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/cmd/kubectl-approve/app/turn"
)

// followConversation is `logs -f CONVERSATION`: it prints the turns there
// are (as logs CONVERSATION does), then watches the conversation's turns
// from that list's resourceVersion — never polling — and prints what each
// change adds: a new turn's header, each turn's messages, calls,
// approvals and end as they are journaled, and once per wait what a turn
// waits for. A conversation has no last turn, so it goes on until
// interrupted (or --timeout, said on errOut); a watch that fell behind
// the apiserver's history lists again, printing only what is new.
func followConversation(ctx context.Context, c client.WithWatch, out, errOut io.Writer, conv *exagentv1.Conversation, timeout time.Duration) error {
	parent := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	fmt.Fprintf(out, "conversation %s: following its turns as they come (Ctrl-C stops)\n", conv.Name)
	p := newThreadPrinter(out, c, true)
	rv, err := p.catchUp(ctx, c, conv)
	for err == nil {
		err = watchTurns(ctx, c, conv, rv, func(t *exagentv1.AgentRun) error { return p.show(ctx, t) })
		if ctx.Err() != nil || (!apierrors.IsGone(err) && !apierrors.IsResourceExpired(err)) {
			break
		}
		rv, err = p.catchUp(ctx, c, conv)
	}
	switch {
	case parent.Err() != nil:
		return nil // interrupted (Ctrl-C): what was printed stands
	case ctx.Err() != nil:
		fmt.Fprintf(errOut, "stopped following conversation %s after %s\n", conv.Name, timeout)
		return nil
	}
	return err
}

// catchUp lists conv's turns and prints what of them is new, in turn
// order; it returns the list's resourceVersion, where the watch goes on.
func (p *threadPrinter) catchUp(ctx context.Context, c client.Reader, conv *exagentv1.Conversation) (string, error) {
	var list exagentv1.AgentRunList
	if err := c.List(ctx, &list, client.InNamespace(conv.Namespace), turn.Of(conv.Name)); err != nil {
		return "", fmt.Errorf("listing the turns of conversation %s: %w", conv.Name, err)
	}
	turns := turn.Sorted(conv.Name, list.Items)
	for i := range turns {
		if err := p.show(ctx, &turns[i]); err != nil {
			return "", err
		}
	}
	return list.ResourceVersion, nil
}

// show prints what t adds, then what it waits for.
func (p *threadPrinter) show(ctx context.Context, t *exagentv1.AgentRun) error {
	if err := p.turn(ctx, t, false); err != nil {
		return err
	}
	_, err := p.waiting(t)
	return err
}

// watchTurns calls fn with each turn of conv that is added or changes
// after rv, until the watch fails or ctx ends.
func watchTurns(ctx context.Context, c client.WithWatch, conv *exagentv1.Conversation, rv string, fn func(*exagentv1.AgentRun) error) error {
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return c.Watch(ctx, &exagentv1.AgentRunList{}, client.InNamespace(conv.Namespace), turn.Of(conv.Name), &client.ListOptions{Raw: &o})
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		return fmt.Errorf("watching the turns of conversation %s: %w", conv.Name, err)
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
			return fmt.Errorf("the watch of conversation %s's turns ended", conv.Name)
		}
		switch ev.Type {
		case watch.Error:
			return fmt.Errorf("watching the turns of conversation %s: %w", conv.Name, apierrors.FromObject(ev.Object))
		case watch.Added, watch.Modified:
			t, ok := ev.Object.(*exagentv1.AgentRun)
			if !ok || t.Spec.ConversationRef == nil || t.Spec.ConversationRef.Name != conv.Name {
				continue // a long name's label value is shared by a hash: the name decides
			}
			if err := fn(t); err != nil {
				return err
			}
		}
	}
}

// followTurn is `say --wait`: it prints the new turn as logs -f
// CONVERSATION prints it — its own lines only, never the earlier turns'
// its transcript starts with — until it ends or waits for a person
// (saying for what, as logs -f RUN does); a turn queued behind another
// says so and is followed until it has run.
func followTurn(ctx context.Context, c client.WithWatch, out io.Writer, t *exagentv1.AgentRun, timeout time.Duration) error {
	p := newThreadPrinter(out, c, false)
	last := t
	err := watchRun(ctx, c, t.Namespace, t.Name, timeout, func(r *exagentv1.AgentRun) (bool, error) {
		if r.UID != t.UID {
			return false, fmt.Errorf("turn %q was deleted and another run created under its name", t.Name)
		}
		last = r
		if err := p.turn(ctx, r, false); err != nil {
			return false, err
		}
		person, err := p.waiting(r)
		if err != nil || person {
			return person, err
		}
		return r.Status.Phase.IsTerminal(), nil
	})
	return followEnded(ctx, err, "turn", t.Name, timeout, last)
}

// followEnded is what a follower that stopped returns: nothing when it
// saw what it waited for or was interrupted (Ctrl-C: what was printed
// stands), a sentence when --timeout ended it.
func followEnded(ctx context.Context, err error, what, name string, timeout time.Duration, last *exagentv1.AgentRun) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return nil
	case wait.Interrupted(err) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("stopped following %s %q after %s; it is %s", what, name, timeout, orNone(string(last.Status.Phase)))
	}
	return err
}
