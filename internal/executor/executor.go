package executor

import (
	"context"
	"sync"
)

// Options bound the executor.
type Options struct {
	// MaxInFlight is the most jobs running at once (default 64).
	MaxInFlight int
	// PerEndpoint is the most jobs running at once against one endpoint (default 8).
	PerEndpoint int
}

// Job is one unit of IO. ctx is the executor's lifetime: it is cancelled
// when the manager stops, and the job must then return promptly.
type Job func(ctx context.Context)

// Executor runs jobs with bounded concurrency. Submit never blocks: jobs
// wait for a slot in their own goroutine, so a reconcile that dispatches IO
// returns at once. It implements manager.Runnable; jobs submitted before
// Start wait for it.
type Executor struct {
	opts  Options
	total chan struct{}

	mu        sync.Mutex
	endpoints map[string]chan struct{}
	ctx       context.Context
	started   chan struct{}
	wg        sync.WaitGroup
}

// New builds an executor.
func New(opts Options) *Executor {
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 64
	}
	if opts.PerEndpoint <= 0 {
		opts.PerEndpoint = 8
	}
	return &Executor{
		opts:      opts,
		total:     make(chan struct{}, opts.MaxInFlight),
		endpoints: map[string]chan struct{}{},
		started:   make(chan struct{}),
	}
}

// Start records the lifetime context, runs until it ends and then waits for
// the running jobs (which see the cancellation) to return.
func (e *Executor) Start(ctx context.Context) error {
	e.mu.Lock()
	e.ctx = ctx
	e.mu.Unlock()
	close(e.started)
	<-ctx.Done()
	e.wg.Wait()
	return nil
}

// NeedLeaderElection is false: a follower has no runs to serve, and the
// pool must be ready the moment it becomes leader.
func (e *Executor) NeedLeaderElection() bool { return false }

// Submit queues job against endpoint (a host, or a name like "kube-apiserver").
func (e *Executor) Submit(endpoint string, job Job) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		<-e.started
		ctx := e.lifetime()
		// The endpoint slot first: a job waiting on a busy endpoint must not
		// hold one of the total slots others could use.
		ep := e.endpoint(endpoint)
		select {
		case ep <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-ep }()
		select {
		case e.total <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-e.total }()
		if ctx.Err() != nil {
			return // stopped while this job waited: it never starts
		}
		job(ctx)
	}()
}

func (e *Executor) lifetime() context.Context {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ctx
}

func (e *Executor) endpoint(name string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch, ok := e.endpoints[name]
	if !ok {
		ch = make(chan struct{}, e.opts.PerEndpoint)
		e.endpoints[name] = ch
	}
	return ch
}
