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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// WatchClient returns a client that can also watch, for `logs -f` and `wait`.
func (f *factory) WatchClient() (client.WithWatch, error) {
	cfg, err := f.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	mapper, err := f.flags.ToRESTMapper()
	if err != nil {
		return nil, fmt.Errorf("building the REST mapper: %w", err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme, Mapper: mapper}) // also the plain Client
	if err != nil {
		return nil, fmt.Errorf("building the client: %w", err)
	}
	return c, nil
}

// watchRun calls fn with the run as it is now and again at every change,
// from a watch (list, then watch from that resourceVersion, resumed after
// the apiserver closes it, as kubectl wait does) — never polling. It
// returns when fn returns true, fn fails, the run is deleted or ctx ends.
// A zero timeout means ctx alone bounds it.
func watchRun(ctx context.Context, c client.WithWatch, ns, name string, timeout time.Duration, fn func(*exagentv1.AgentRun) (bool, error)) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	byName := fields.OneTermEqualSelector("metadata.name", name)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list := &exagentv1.AgentRunList{}
			return list, c.List(ctx, list, &client.ListOptions{Namespace: ns, FieldSelector: byName, Raw: &o})
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &exagentv1.AgentRunList{}, &client.ListOptions{Namespace: ns, FieldSelector: byName, Raw: &o})
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &exagentv1.AgentRun{}, nil, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Deleted:
			return false, fmt.Errorf("run %q was deleted", name)
		case watch.Added, watch.Modified:
			run, ok := ev.Object.(*exagentv1.AgentRun)
			if !ok {
				return false, nil
			}
			return fn(run)
		}
		return false, nil
	})
	return err
}
