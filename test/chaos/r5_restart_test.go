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
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// testRestartFromBytes (R5): with runs paused (AwaitingApproval) and runs
// in the middle of a tool call and of a model request, the whole control
// plane stops — the manager is SIGKILLed, kube-apiserver and etcd stop —
// and a fresh one starts on the same etcd data directory (devcluster
// --data-dir). Every run goes on from what was stored: the paused ones
// are approved after the restart, the mid-call ones are recovered
// (Uncertain and resolved with the oracle's evidence, or the model request
// sent again). All end Succeeded; the history check holds across the
// restart.
func testRestartFromBytes(t *testing.T) {
	binaries(t)
	dir := filepath.Join(suite.work, "r5")
	cl, err := startCluster(dir, filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	var s *scenario
	defer func() {
		if s != nil {
			s.rec.Stop() // an open watch holds the apiserver's shutdown
		}
		if err := cl.stop(); err != nil {
			t.Errorf("stopping the R5 control plane: %v", err)
		}
	}()
	kindOf := func(run string) string { return strings.SplitN(run, "-", 2)[0] }
	s = newScenario(t, cl, "r5", func(run types.NamespacedName, step int32) Turn {
		if step > 0 {
			return Turn{Text: "done"}
		}
		switch kindOf(run.Name) {
		case "paused":
			return Turn{Calls: []ToolCall{{ID: "wire", Name: toolWire, Args: map[string]any{"amount": 9}}}}
		case "tool":
			return Turn{Calls: []ToolCall{{ID: "charge", Name: toolCharge, Args: map[string]any{"amount": 4}}}}
		}
		return Turn{Text: "answered after the restart"}
	})
	s.model.HoldWhen(func(r Request) bool { return kindOf(r.Run.Name) == "model" && r.Step == 0 })
	s.tools.HoldWhen(func(r Request) bool { return kindOf(r.Run.Name) == "tool" })

	mgr, err := cl.startManager(managerOpts{name: "r5-before", webhooks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Kill()
	s.createAgent("durable") // admission is the manager's here
	k := sizes().restartRuns
	var paused, midCall []string
	for i := range k {
		for _, kind := range []string{"paused", "tool", "model"} {
			name := fmt.Sprintf("%s-%02d", kind, i)
			if err := s.createRun(name, "durable"); err != nil {
				t.Fatal(err)
			}
			if kind == "paused" {
				paused = append(paused, name)
			} else {
				midCall = append(midCall, name)
			}
		}
	}
	held := map[string]bool{}
	err = procs.Poll(2*time.Minute, func() (bool, error) {
		for {
			select {
			case r := <-s.model.Held():
				held[r.Run.Name] = true
				continue
			case r := <-s.tools.Held():
				held[r.Run.Name] = true
				continue
			default:
			}
			break
		}
		for _, name := range midCall {
			if !held[name] {
				return false, nil
			}
		}
		for _, name := range paused {
			if r := s.rec.Latest(name); r == nil || r.Status.Phase != exagentv1.PhaseAwaitingApproval {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("seed %d: runs did not pause or reach their calls: %v (held %v)\n%s", seed(), err, held, mgr.Tail())
	}
	// Stop everything: the manager dies with its calls in flight, then the
	// apiserver and etcd stop.
	mgr.Kill()
	s.kills++
	s.rec.Suspend()
	before := s.rec.Runs()
	if err := cl.stopPlane(); err != nil {
		t.Fatalf("stopping the control plane: %v", err)
	}
	s.model.ReleaseAll()
	s.tools.ReleaseAll()
	if err := cl.start(); err != nil {
		t.Fatalf("starting the control plane again on its data directory: %v", err)
	}
	if err := s.rec.ResumeAfterRestart(context.Background()); err != nil {
		t.Fatalf("recording again after the restart: %v", err)
	}
	// The same objects, from the same bytes.
	for _, name := range s.runNames() {
		vs := before[s.uids[name]]
		if len(vs) == 0 {
			t.Fatalf("run %s was never recorded before the restart", name)
		}
		run := &exagentv1.AgentRun{}
		if err := cl.c.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: name}, run); err != nil {
			t.Fatalf("run %s after the restart: %v", name, err)
		}
		// What the recorder saw last is stored (a write it had not seen yet
		// may have landed just before the stop).
		if last := vs[len(vs)-1]; run.UID != last.Run.UID || parseRV(run.ResourceVersion) < last.RV {
			t.Errorf("run %s after the restart is uid %s rv %s; before it the recorder saw uid %s rv %d", name, run.UID, run.ResourceVersion, last.Run.UID, last.RV)
		}
	}

	after, err := cl.startManager(managerOpts{name: "r5-after", webhooks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer after.Kill()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.decideLoop(ctx)
	s.waitDone(2 * time.Minute)
	cancel()
	for _, name := range s.runNames() {
		if r := s.rec.Latest(name); r == nil || r.Status.Phase != exagentv1.PhaseSucceeded {
			phase := "unseen"
			if r != nil {
				phase = fmt.Sprintf("%s (%s: %s)", r.Status.Phase, r.Status.Reason, r.Status.Message)
			}
			t.Errorf("seed %d: run %s ended %s after the restart, want Succeeded", seed(), name, phase)
		}
	}
	s.verify()
}

func parseRV(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}
