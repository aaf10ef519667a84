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
