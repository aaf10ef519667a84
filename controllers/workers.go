package controllers

import (
	"context"
	"sync"
)

// runWorkers runs n workers, each calling work until it returns false,
// until ctx ends; then it shuts the workers' queue down (shutDown, which
// makes work return false once the item in hand is done) and waits for
// them. The notifier, the reaper and the deletion of deleted runs'
// dependents each drain their own queue this way.
func runWorkers(ctx context.Context, n int, shutDown func(), work func(context.Context) bool) {
	var wg sync.WaitGroup
	for range max(n, 1) {
		wg.Go(func() {
			for work(ctx) {
			}
		})
	}
	<-ctx.Done()
	shutDown()
	wg.Wait()
}
