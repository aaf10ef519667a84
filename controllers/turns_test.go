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
