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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestTurns: one run's turns never overlap, another run's are not held
// up, and a released run leaves nothing behind.
func TestTurns(t *testing.T) {
	tu := newTurns()
	a, b := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}
	releaseA := tu.take(a)
	tu.take(b)() // another run's turn is free
	second := make(chan struct{})
	go func() {
		defer close(second)
		tu.take(a)()
	}()
	select {
	case <-second:
		t.Fatal("a second turn on the same run began while the first was held")
	case <-time.After(50 * time.Millisecond): // the second turn is still waiting, as it must
	}
	releaseA()
	<-second
	tu.mu.Lock()
	defer tu.mu.Unlock()
	if len(tu.runs) != 0 {
		t.Errorf("turns left behind: %v", tu.runs)
	}
}
