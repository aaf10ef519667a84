package pool

import (
	"context"
	"sync"
)

// Run runs n workers (at least one), each calling work until it returns
// false, until ctx ends; then it shuts the workers' queue down (shutDown,
// which makes work return false once the item in hand is done) and waits
// for them.
func Run(ctx context.Context, n int, shutDown func(), work func(context.Context) bool) {
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
