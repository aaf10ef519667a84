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

package chaos

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Recorder keeps the write history of every run of a namespace: a watch
// delivers every version in resourceVersion order (the apiserver's watch
// cache sees each etcd event), full objects. It also watches the
// namespace's Deployments and turns each change of spec.replicas to a
// value a scenario expects from a builtin scale call into a builtin
// Request, stamped with the change's own revision.
type Recorder struct {
	c  client.WithWatch
	ns string

	mu       sync.Mutex
	runs     map[types.UID][]Version
	byName   map[string]types.UID
	builtins []Request
	expect   map[string]expectedScale // by Deployment name
	replicas map[string]int32
	gaps     []string
	changed  chan struct{}
	cancel   context.CancelFunc
	done     sync.WaitGroup
	// lastRV is the last resourceVersion each watch delivered.
	lastRV map[string]string
	// seen counts distinct object versions observed.
	seen    int
	seenRVs map[string]bool
}

type expectedScale struct {
	run      types.NamespacedName
	uid      types.UID
	callID   string
	replicas int32
}

// NewRecorder starts recording namespace ns; call Stop when done.
func NewRecorder(c client.WithWatch, ns string) (*Recorder, error) {
	rec := &Recorder{c: c, ns: ns, runs: map[types.UID][]Version{}, byName: map[string]types.UID{},
		expect: map[string]expectedScale{}, replicas: map[string]int32{}, changed: make(chan struct{}),
		lastRV: map[string]string{}, seenRVs: map[string]bool{}}
	ctx := context.Background()
	runRV, err := rec.list(ctx, &exagentv1.AgentRunList{})
	if err != nil {
		return nil, err
	}
	depRV, err := rec.list(ctx, &appsv1.DeploymentList{})
	if err != nil {
		return nil, err
	}
	rec.lastRV = map[string]string{"runs": runRV, "deployments": depRV}
	rec.Resume()
	return rec, nil
}

// Suspend ends the watches and keeps what was recorded, as before a
// planned stop of the apiserver (an open watch holds its shutdown).
func (rec *Recorder) Suspend() { rec.Stop() }

// Resume watches again from the last versions delivered.
func (rec *Recorder) Resume() {
	ctx, cancel := context.WithCancel(context.Background())
	rec.mu.Lock()
	rec.cancel = cancel
	runRV, depRV := rec.lastRV["runs"], rec.lastRV["deployments"]
	rec.mu.Unlock()
	rec.startWatches(ctx, runRV, depRV)
}

// ResumeAfterRestart lists again, then watches from there: a restarted
// apiserver's watch cache cannot resume an older resourceVersion. Call it
// before anything writes again; a version it had not recorded is a gap.
func (rec *Recorder) ResumeAfterRestart(ctx context.Context) error {
	before := rec.versionsSeen()
	runRV, err := rec.list(ctx, &exagentv1.AgentRunList{})
	if err != nil {
		return err
	}
	depRV, err := rec.list(ctx, &appsv1.DeploymentList{})
	if err != nil {
		return err
	}
	if missed := rec.versionsSeen() - before; missed > 0 {
		rec.gap(fmt.Sprintf("%d object versions appeared while the recorder was suspended", missed))
	}
	wctx, cancel := context.WithCancel(context.Background())
	rec.mu.Lock()
	rec.cancel = cancel
	rec.mu.Unlock()
	rec.startWatches(wctx, runRV, depRV)
	return nil
}

func (rec *Recorder) startWatches(ctx context.Context, runRV, depRV string) {
	rec.done.Add(2)
	go rec.watch(ctx, "runs", &exagentv1.AgentRunList{}, runRV)
	go rec.watch(ctx, "deployments", &appsv1.DeploymentList{}, depRV)
}

// ExpectScale says that run's call callID scales Deployment name to replicas.
func (rec *Recorder) ExpectScale(name string, run types.NamespacedName, uid types.UID, callID string, replicas int32) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.expect[name] = expectedScale{run: run, uid: uid, callID: callID, replicas: replicas}
}

// Stop ends the watches.
func (rec *Recorder) Stop() {
	rec.mu.Lock()
	cancel := rec.cancel
	rec.mu.Unlock()
	cancel()
	rec.done.Wait()
}

func (rec *Recorder) list(ctx context.Context, list client.ObjectList) (string, error) {
	if err := rec.c.List(ctx, list, client.InNamespace(rec.ns)); err != nil {
		return "", fmt.Errorf("recorder: listing %T: %w", list, err)
	}
	switch l := list.(type) {
	case *exagentv1.AgentRunList:
		for i := range l.Items {
			rec.observe(watch.Added, &l.Items[i])
		}
	case *appsv1.DeploymentList:
		for i := range l.Items {
			rec.observe(watch.Added, &l.Items[i])
		}
	}
	return list.(metav1.ListInterface).GetResourceVersion(), nil
}

// watch follows one kind from rv, re-establishing the watch from the last
// version seen when the stream ends (timeouts, an apiserver restart).
func (rec *Recorder) watch(ctx context.Context, kind string, list client.ObjectList, rv string) {
	defer rec.done.Done()
	defer func() {
		rec.mu.Lock()
		rec.lastRV[kind] = rv
		rec.mu.Unlock()
	}()
	for ctx.Err() == nil {
		w, err := rec.c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(rec.ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = rec.relist(ctx, list, rv, err.Error())
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				if st, ok := ev.Object.(*metav1.Status); ok && (st.Code == 410) {
					rv = rec.relist(ctx, list, rv, st.Message)
				}
				break
			}
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			rv = obj.GetResourceVersion()
			if ev.Type != watch.Bookmark {
				rec.observe(ev.Type, obj)
			}
		}
		w.Stop()
	}
}

// relist follows a watch that can no longer resume (a restarted
// apiserver's watch cache starts at its own first revision): it lists
// again, and records a gap only when an object changed in between, since
// only then are writes missing from the history.
func (rec *Recorder) relist(ctx context.Context, list client.ObjectList, rv, why string) string {
	before := rec.versionsSeen()
	nrv, err := rec.list(ctx, list.DeepCopyObject().(client.ObjectList))
	if err != nil {
		return rv // retried by the caller's next watch
	}
	if missed := rec.versionsSeen() - before; missed > 0 {
		rec.gap(fmt.Sprintf("%T watch from rv %s ended (%s); %d objects had changed when listed again", list, rv, why, missed))
	}
	return nrv
}

// versionsSeen counts distinct versions recorded (a relisted version
// already recorded adds none).
func (rec *Recorder) versionsSeen() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.seen
}

func (rec *Recorder) gap(what string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.gaps = append(rec.gaps, what)
}

func (rec *Recorder) observe(t watch.EventType, obj client.Object) {
	rv, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	now := time.Now()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	id := string(obj.GetUID()) + "@" + obj.GetResourceVersion()
	if t != watch.Deleted && rec.seenRVs[id] {
		return // listed again after a watch ended: already recorded
	}
	rec.seenRVs[id] = true
	rec.seen++
	switch o := obj.(type) {
	case *exagentv1.AgentRun:
		v := Version{RV: rv, Seen: now, Deleted: t == watch.Deleted, Run: o.DeepCopy()}
		rec.runs[o.UID] = append(rec.runs[o.UID], v)
		rec.byName[o.Name] = o.UID
	case *appsv1.Deployment:
		var n int32 = 1
		if o.Spec.Replicas != nil {
			n = *o.Spec.Replicas
		}
		before, seen := rec.replicas[o.Name]
		rec.replicas[o.Name] = n
		if e, ok := rec.expect[o.Name]; ok && t == watch.Modified && seen && before != n && n == e.replicas {
			rec.builtins = append(rec.builtins, Request{Kind: KindBuiltin, Server: "deployments/" + o.Name,
				Run: e.run, RunUID: e.uid, CallID: e.callID, Key: string(e.uid) + "/" + e.callID,
				Applied: true, At: now, StoreRV: rv, EffectRV: true})
		}
	}
	close(rec.changed)
	rec.changed = make(chan struct{})
}

// Latest returns the newest recorded version of run name (nil if none).
func (rec *Recorder) Latest(name string) *exagentv1.AgentRun {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	vs := rec.runs[rec.byName[name]]
	if len(vs) == 0 || vs[len(vs)-1].Deleted {
		return nil
	}
	return vs[len(vs)-1].Run.DeepCopy()
}

// All returns the newest version of every live run.
func (rec *Recorder) All() []*exagentv1.AgentRun {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := make([]*exagentv1.AgentRun, 0, len(rec.runs))
	for _, vs := range rec.runs {
		if n := len(vs); n > 0 && !vs[n-1].Deleted {
			out = append(out, vs[n-1].Run.DeepCopy())
		}
	}
	return out
}

// Changed is closed at the next recorded event.
func (rec *Recorder) Changed() <-chan struct{} {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.changed
}

// Runs returns a copy of every run's versions.
func (rec *Recorder) Runs() map[types.UID][]Version {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := make(map[types.UID][]Version, len(rec.runs))
	for uid, vs := range rec.runs {
		out[uid] = append([]Version(nil), vs...)
	}
	return out
}

// Builtins returns the builtin effects observed.
func (rec *Recorder) Builtins() []Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Request(nil), rec.builtins...)
}

// BuiltinApplied reports whether run's call callID scaled its Deployment.
func (rec *Recorder) BuiltinApplied(uid types.UID, callID string) (Request, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.builtins {
		if r.RunUID == uid && r.CallID == callID {
			return r, true
		}
	}
	return Request{}, false
}

// Gaps lists the times a watch expired and history may be missing.
func (rec *Recorder) Gaps() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.gaps...)
}
