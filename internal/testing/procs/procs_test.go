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

package procs

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests' child is this test binary run again with PROCS_CHILD set: it
// does what the variable says and never runs a test.
func TestMain(m *testing.M) {
	if what := os.Getenv("PROCS_CHILD"); what != "" {
		child(what)
		return
	}
	os.Exit(m.Run())
}

// child behaves as one kind of process a suite starts.
func child(what string) {
	switch what {
	case "crash": // a manager that cannot start
		fmt.Println("error: no kubeconfig at /nowhere")
		os.Exit(3)
	case "drains": // a manager that stops cleanly on SIGTERM
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		fmt.Println(`"msg":"Starting workers" "controller":"agentrun"`)
		<-sig
		fmt.Println("drained")
		os.Exit(0)
	case "listens": // a webhook server, ready once it listens
		// Not ready at once: it listens only after the test opens the gate
		// (a FIFO: opening it for reading blocks until the test opens it
		// for writing), so the wait must poll.
		gate, err := os.Open(os.Getenv("PROCS_GATE"))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		_ = gate.Close()
		l, err := net.Listen("tcp", os.Getenv("PROCS_ADDR"))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		for {
			c, err := l.Accept()
			if err == nil {
				_ = c.Close()
			}
		}
	}
	os.Exit(2)
}

func startChild(t *testing.T, what string, env ...string) *Process {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Spec{Name: what, Bin: self, Env: append(os.Environ(), append(env, "PROCS_CHILD="+what)...),
		Log: filepath.Join(t.TempDir(), what+".log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// A process that dies while a test waits for it to be ready ends the wait
// at once, with its exit and its log — not at the deadline.
func TestWaitReadyFailsWhenTheChildExits(t *testing.T) {
	p := startChild(t, "crash")
	t0 := time.Now()
	err := p.WaitReady(time.Minute, Logged("never printed"))
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "no kubeconfig at /nowhere") {
		t.Fatalf("WaitReady = %v, want the exit status and the log's tail", err)
	}
	if waited := time.Since(t0); waited > 30*time.Second {
		t.Errorf("WaitReady took %s: it waited for the deadline instead of the exit", waited)
	}
}

// Stop is a graceful stop: the child sees SIGTERM and exits 0 on its own.
func TestStopIsGraceful(t *testing.T) {
	p := startChild(t, "drains")
	if err := p.WaitReady(time.Minute, Workers()); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Fatalf("Stop = %v, want the child's clean exit", err)
	}
	if !p.LogContains("drained") {
		t.Errorf("the child did not drain:\n%s", p.Tail())
	}
}

// Kill is SIGKILL: the child that would drain on SIGTERM gets no chance.
func TestKillIsACrash(t *testing.T) {
	p := startChild(t, "drains")
	if err := p.WaitReady(time.Minute, Workers()); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if !p.Exited() || !IsSignalExit(p.Err()) {
		t.Fatalf("after Kill: exited %v, err %v; want ended by a signal", p.Exited(), p.Err())
	}
	if p.LogContains("drained") {
		t.Errorf("a killed child drained:\n%s", p.Tail())
	}
}

// StartManager waits for its Ready condition: here a listening port.
func TestStartManagerWaitsUntilReady(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	type started struct {
		p   *Process
		err error
	}
	done := make(chan started, 1)
	go func() {
		p, err := StartManager(ManagerSpec{Bin: self, Kubeconfig: "/dev/null",
			Env: append(os.Environ(), "PROCS_CHILD=listens", "PROCS_ADDR="+addr, "PROCS_GATE="+gate),
			Log: filepath.Join(t.TempDir(), "manager.log"), Ready: Listening(addr), Timeout: time.Minute})
		done <- started{p, err}
	}()
	// The child blocks on the gate: nothing listens yet, and StartManager
	// has not returned.
	if Dial(addr) {
		t.Fatalf("%s accepts connections before the child opened the gate", addr)
	}
	select {
	case r := <-done:
		t.Fatalf("StartManager returned before the child listened: %v", r.err)
	default:
	}
	w, err := os.OpenFile(gate, os.O_WRONLY, 0) // blocks until the child opens it
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	p := r.p
	t.Cleanup(p.Kill)
	if !Dial(addr) {
		t.Errorf("StartManager returned before %s accepted connections", addr)
	}
}

// Memory reads the child's resident set (Linux only: /proc).
func TestMemory(t *testing.T) {
	p := startChild(t, "drains")
	if err := p.WaitReady(time.Minute, Workers()); err != nil {
		t.Fatal(err)
	}
	m, err := p.Memory()
	if runtime.GOOS != "linux" {
		if err == nil {
			t.Errorf("Memory outside Linux = %+v, want an error", m)
		}
		return
	}
	if err != nil || m.RSS <= 0 || m.Peak < m.RSS || m.Anon <= 0 || m.File <= 0 {
		t.Errorf("Memory = %+v, %v; want a resident set with its peak, anonymous and file parts", m, err)
	}
}

// Build builds a target once per Builder however often it is asked.
func TestBuildOnce(t *testing.T) {
	b := &Builder{Dir: t.TempDir()}
	target := Target{Name: "hello", Package: "./internal/testing/procs/testdata/hello", Static: true}
	bin, err := b.Build(target)
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Build(target); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); !os.IsNotExist(err) {
		t.Errorf("the second Build built %s again (first built at %s)", bin, first.ModTime())
	}
	if _, err := b.Build(Target{Name: "broken", Package: "./internal/testing/procs/testdata/nothing-here"}); err == nil ||
		!strings.Contains(err.Error(), "nothing-here") {
		t.Errorf("building a missing package: %v, want an error naming it", err)
	}
}

// FreePort's ports are below the ephemeral range, where no outgoing
// connection can take them between a process's stop and its restart.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < lowestPort || port >= lo {
			t.Fatalf("FreePort() = %d, want in [%d, %d)", port, lowestPort, lo)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(port)))
		if err != nil {
			t.Fatalf("FreePort() = %d, which cannot be listened on: %v", port, err)
		}
		_ = l.Close()
	}
}
