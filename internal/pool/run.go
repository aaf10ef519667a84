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
