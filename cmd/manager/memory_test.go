package main

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	if !tuneGC() {
		t.Fatal("GOGC unset: the manager's default was not applied")
	}
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("GC percent %d; want %d", got, defaultGCPercent)
	}
	t.Setenv("GOGC", "80")
	if tuneGC() {
		t.Error("GOGC=80 set: the manager overrode it")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent %d; want the one set before (100)", got)
	}
}
