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

package executor

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/exagent-io/exagent/internal/life"
)

// Options bound the executor.
type Options struct {
	// MaxInFlight is the most jobs running at once (DefaultMaxInFlight).
	MaxInFlight int
	// PerEndpoint is the most jobs running at once against one endpoint (DefaultPerEndpoint).
	PerEndpoint int
	// DrainTimeout is how long jobs already running when the manager stops
	// go on before their context is cancelled (0: at once). No job starts
	// after the stop.
	DrainTimeout time.Duration
}

// The defaults are sized for model and tool calls, which wait on the
// network far longer than they work: a job waiting on its endpoint costs
// a goroutine and a connection, not a CPU. All runs of a team usually
// share one model endpoint, so one endpoint gets enough for a few hundred
// runs at once; a quarter of the total keeps one slow endpoint from
// starving the others (docs/sizing.md).
const (
	DefaultMaxInFlight = 1024
	DefaultPerEndpoint = 256
)

// Job is one unit of IO. ctx is the executor's lifetime: it is cancelled
// when the manager stops (or, with a DrainTimeout, at most that long
// after), and the job must then return promptly.
type Job func(ctx context.Context)

// Executor runs jobs with bounded concurrency. Submit never blocks: jobs
// wait for a slot in their own goroutine, so a reconcile that dispatches IO
// returns at once. It implements manager.Runnable; jobs submitted before
// Start wait for it.
type Executor struct {
	opts  Options
	total chan struct{}

	mu sync.Mutex
	// endpoints holds a bucket only while a job waits on it or runs in it:
	// endpoint names come from Agents (a tool's host, a model's URL), so
	// a bucket kept after its last job would let tenants grow the map
	// without bound. A bucket with jobs is never dropped, so its limit
	// holds for as long as anyone is under it.
	endpoints map[string]*bucket
	ctx       context.Context // jobs' context: outlives stop by the drain
	stop      context.Context // the manager's context: no job starts after it ends
	closed    bool            // Start is waiting for the jobs: Submit drops new ones
	started   chan struct{}
	wg        sync.WaitGroup
}

// WithDefaults fills the unset limits with the defaults.
func (o Options) WithDefaults() Options {
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.PerEndpoint <= 0 {
		o.PerEndpoint = DefaultPerEndpoint
	}
	return o
}

// New builds an executor.
func New(opts Options) *Executor {
	opts = opts.WithDefaults()
	return &Executor{
		opts:      opts,
		total:     make(chan struct{}, opts.MaxInFlight),
		endpoints: map[string]*bucket{},
		started:   make(chan struct{}),
	}
}

// Start records the lifetime context, runs until it ends and then waits for
// the running jobs to return. Their context is cancelled at once, or with
// a DrainTimeout when they all returned or the timeout passed, whichever
// comes first.
func (e *Executor) Start(ctx context.Context) error {
	jobs, cancel := ctx, context.CancelFunc(func() {})
	if e.opts.DrainTimeout > 0 {
		// The jobs' context outlives the stop by at most the drain.
		jobs, cancel = context.WithCancel(context.WithoutCancel(ctx))
	}
	defer cancel()
	e.mu.Lock()
	e.ctx, e.stop = jobs, ctx
	e.mu.Unlock()
	close(e.started)
	<-ctx.Done()
	e.mu.Lock()
	e.closed = true // no wg.Add may race with the Wait below
	e.mu.Unlock()
	if e.opts.DrainTimeout > 0 {
		t := time.AfterFunc(e.opts.DrainTimeout, cancel)
		defer t.Stop()
	}
	e.wg.Wait()
	return nil
}

// Draining is closed when the jobs' context ends: at the stop, or at the
// end of the drain (nil before Start).
func (e *Executor) Draining() <-chan struct{} {
	ctx, _ := e.lifetime()
	if ctx == nil {
		return nil
	}
	return ctx.Done()
}

// NeedLeaderElection is false: a follower has no runs to serve, and the
// pool must be ready the moment it becomes leader.
func (e *Executor) NeedLeaderElection() bool { return false }

// Submit queues job against endpoint (a host, or a name like "kube-apiserver").
func (e *Executor) Submit(endpoint string, job Job) { e.Go(Task{Endpoint: endpoint, Run: job}) }

// SubmitOr is Submit with dropped, called (when not nil) instead of job
// when the job never starts because the manager stopped first.
func (e *Executor) SubmitOr(endpoint string, job Job, dropped func()) {
	t := Task{Endpoint: endpoint, Run: job}
	if dropped != nil {
		t.NotStarted = func(error) { dropped() }
	}
	e.Go(t)
}

// ErrStopped is the NotStarted cause of a job the manager's stop caught
// before it began.
var ErrStopped = errors.New("executor stopped before the job started")

// Task is one unit of IO with what decides whether it may still start.
type Task struct {
	// Endpoint names the per-endpoint bucket (a host, "kube-apiserver", …).
	Endpoint string
	// Ctx, when set, is the life of what the job works for (a run's claim):
	// once it ends, a waiting job never starts and a running job's context
	// is cancelled.
	Ctx context.Context
	// Ready, when set, is asked at the moment the job would start (after
	// its slots were granted): a non-nil error keeps the job from starting.
	// Jobs can wait long for a slot; what was true at Submit may not be.
	Ready func() error
	// Admit, when set, is asked before the task waits for any slot, and
	// may block (a shared rate limit: internal to the caller): a task
	// waiting in it holds no executor slot, so it keeps no other job from
	// starting. A non-nil error keeps the job from starting (NotStarted).
	// release, when not nil, is called once the job has run or has not
	// started after all.
	Admit func(ctx context.Context) (release func(), err error)
	// Run is the job.
	Run Job
	// NotStarted, when set, is called instead of Run when the job never
	// starts: with ErrStopped, Ctx's error, or Ready's error.
	NotStarted func(cause error)
}

// Go queues the task. It never blocks: the task waits for its slots in
// its own goroutine.
func (e *Executor) Go(t Task) {
	notStarted := func(cause error) {
		if t.NotStarted != nil {
			t.NotStarted(cause)
		}
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		notStarted(ErrStopped)
		return
	}
	e.wg.Add(1)
	e.mu.Unlock()
	owner := t.Ctx
	if owner == nil {
		owner = context.Background()
	}
	go func() {
		defer e.wg.Done()
		<-e.started
		ctx, stop := e.lifetime()
		if t.Admit != nil {
			actx, cancel := context.WithCancelCause(owner)
			unhook := context.AfterFunc(stop, func() { cancel(ErrStopped) })
			release, err := t.Admit(actx)
			unhook()
			cancel(nil)
			if release != nil {
				defer release()
			}
			if err != nil {
				if stop.Err() != nil {
					err = ErrStopped
				}
				notStarted(err)
				return
			}
		}
		// The endpoint slot first: a job waiting on a busy endpoint must not
		// hold one of the total slots others could use.
		b := e.acquire(t.Endpoint)
		defer e.release(t.Endpoint, b)
		ep := b.slots
		select {
		case ep <- struct{}{}:
		case <-stop.Done():
			notStarted(ErrStopped)
			return
		case <-owner.Done():
			notStarted(context.Cause(owner))
			return
		}
		defer func() { <-ep }()
		select {
		case e.total <- struct{}{}:
		case <-stop.Done():
			notStarted(ErrStopped)
			return
		case <-owner.Done():
			notStarted(context.Cause(owner))
			return
		}
		defer func() { <-e.total }()
		switch {
		case life.Stopping(ctx, stop):
			notStarted(ErrStopped) // stopped while this job waited: it never starts
			return
		case owner.Err() != nil:
			notStarted(context.Cause(owner))
			return
		}
		if t.Ready != nil {
			if err := t.Ready(); err != nil {
				notStarted(err)
				return
			}
		}
		jobCtx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		unhook := context.AfterFunc(owner, func() { cancel(context.Cause(owner)) })
		defer unhook()
		t.Run(jobCtx)
	}()
}

func (e *Executor) lifetime() (jobs, stop context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ctx, e.stop
}

// bucket is one endpoint's slots and the jobs that hold a reference to
// it (waiting for a slot or running).
type bucket struct {
	slots chan struct{}
	refs  int
}

// acquire returns name's bucket, made on first use, with one more reference.
func (e *Executor) acquire(name string) *bucket {
	e.mu.Lock()
	defer e.mu.Unlock()
	b, ok := e.endpoints[name]
	if !ok {
		b = &bucket{slots: make(chan struct{}, e.opts.PerEndpoint)}
		e.endpoints[name] = b
	}
	b.refs++
	return b
}

// release drops a job's reference to b, and the bucket with the last one:
// an idle endpoint costs nothing, and the next job makes it again.
func (e *Executor) release(name string, b *bucket) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b.refs--
	if b.refs == 0 && e.endpoints[name] == b {
		delete(e.endpoints, name)
	}
}

// Endpoints is the number of endpoint buckets held: those with a job
// waiting or running.
func (e *Executor) Endpoints() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.endpoints)
}
