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

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

const (
	// bulkRuns is how many runs of the scale namespace do not wait.
	bulkRuns = 4997
	// awaitingSelector is the field selector the plugin must send.
	awaitingSelector = "status.phase=AwaitingApproval"
)

// TestListAtScale: in a namespace of 5,000 runs of which 3 wait for an
// approval, `kubectl approve list` makes one request for runs — a list the
// apiserver filters by status.phase — and prints what it always printed;
// completion asks the apiserver for the waiting runs and gets a run by
// name; `list -w` prints a run that starts waiting after it started.
// Every request goes through a counting proxy (counting_test.go), as alice
// with her own certificate, through the real kubectl.
func TestListAtScale(t *testing.T) {
	ns := "e2e-scale"
	must(t, "", samples(t, ns), "apply", "-f", "-") // agent ops, run scale-web (waits), alice approves
	must(t, "", runYAML(ns, "scale-2", "ops")+"---\n"+runYAML(ns, "scale-3", "ops"), "apply", "-f", "-")
	waiting := []string{"scale-2", "scale-3", "scale-web"}
	for _, r := range waiting {
		must(t, "", "", "approve", "wait", r, "-n", ns, "--for=paused", "--timeout="+waitTimeout)
	}
	createBulkRuns(t, ns, bulkRuns)
	// The later tests share the manager: leave it no bulk to cache or to
	// reconcile after the restart test starts a new one (runs have no
	// finalizer: one delete collection removes them).
	t.Cleanup(func() {
		if err := adminClient(t).DeleteAllOf(context.Background(), &exagentv1.AgentRun{}, client.InNamespace(ns)); err != nil {
			t.Errorf("deleting the runs of %s: %v", ns, err)
		}
	})
	proxy := newCountingProxy(t, "alice")
	const counted = "alice-counted"

	t.Run("list", func(t *testing.T) {
		proxy.take(t)
		out := must(t, counted, "", "approve", "list", "-n", ns)
		reqs := proxy.take(t)
		if len(reqs) != 1 {
			t.Fatalf("list made %d requests for objects, want 1:\n%s", len(reqs), requests(reqs))
		}
		r := reqs[0]
		if r.Method != "GET" || r.Path != "/apis/exagent.io/v1alpha1/namespaces/"+ns+"/agentruns" ||
			r.Query.Get("fieldSelector") != awaitingSelector || r.Query.Get("limit") == "" || r.Query.Get("watch") != "" {
			t.Errorf("list asked %s; want one paged list of agentruns with fieldSelector=%s", r, awaitingSelector)
		}
		checkListOutput(t, ns, out, waiting)
	})

	t.Run("completion", func(t *testing.T) {
		proxy.take(t)
		runs := plugin(t, counted, "__complete", "-n", ns, "")
		if runs.Err != nil {
			t.Fatal(runs.Err)
		}
		var names []string
		for _, l := range scanLines(runs.Stdout) {
			if name, desc, ok := strings.Cut(l, "\t"); ok && desc == string(exagentv1.PhaseAwaitingApproval) {
				names = append(names, name)
			}
		}
		if diff := cmp.Diff(waiting, names); diff != "" {
			t.Errorf("approve <TAB> offers (-want +got):\n%s\n%s", diff, runs.Stdout)
		}
		reqs := proxy.take(t)
		if len(reqs) != 1 || reqs[0].Query.Get("fieldSelector") != awaitingSelector || !strings.HasSuffix(reqs[0].Path, "/agentruns") {
			t.Errorf("completing runs asked:\n%swant one list with fieldSelector=%s", requests(reqs), awaitingSelector)
		}

		ids := plugin(t, counted, "__complete", "-n", ns, "scale-web", "")
		if want := getRun(t, ns, "scale-web").Status.Approvals[0].ID + "\tscale_deployment"; !strings.Contains(ids.Stdout, want) {
			t.Errorf("approve scale-web <TAB> offers:\n%swant %q", ids.Stdout, want)
		}
		reqs = proxy.take(t)
		if len(reqs) != 1 || reqs[0].Method != "GET" || reqs[0].Path != "/apis/exagent.io/v1alpha1/namespaces/"+ns+"/agentruns/scale-web" {
			t.Errorf("completing approval ids asked:\n%swant one get of the run", requests(reqs))
		}
	})

	t.Run("watch", func(t *testing.T) {
		proxy.take(t)
		w := startWatch(t, counted, "approve", "list", "-n", ns, "-w")
		// The list is printed once the watch's starting point is known: a
		// run that pauses after these lines is delivered by the watch.
		first := w.lines(t, 1+len(waiting), 2*time.Minute)
		checkListOutput(t, ns, strings.Join(first, "\n")+"\n", waiting)

		must(t, "", runYAML(ns, "scale-4", "ops"), "apply", "-f", "-")
		next := w.lines(t, 1, 3*time.Minute)
		row := strings.Fields(next[0])
		if len(row) < 5 || row[0] != ns || row[1] != "scale-4" || row[3] != "scale_deployment" {
			t.Errorf("after scale-4 paused, -w printed %q; want its row", next[0])
		}
		w.stop(t)
		var watches int
		for _, r := range proxy.take(t) {
			if r.Query.Get("watch") == "true" || r.Query.Get("watch") == "1" {
				watches++
				if r.Query.Get("fieldSelector") != awaitingSelector {
					t.Errorf("list -w watched %s; want fieldSelector=%s", r, awaitingSelector)
				}
			}
		}
		if watches == 0 {
			t.Error("list -w made no watch request")
		}
	})
}

// checkListOutput compares out with the table `kubectl approve list` has
// always printed for runs: a header and one row per pending approval,
// ordered by run, with the approval, tool, compact arguments, age and
// time to expiry.
func checkListOutput(t *testing.T, ns, out string, runs []string) {
	t.Helper()
	lines := scanLines(out)
	if len(lines) != 1+len(runs) {
		t.Fatalf("want a header and %d rows, got:\n%s", len(runs), out)
	}
	if diff := cmp.Diff([]string{"NAMESPACE", "RUN", "APPROVAL", "TOOL", "ARGS", "REQUESTED", "EXPIRES"}, strings.Fields(lines[0])); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	for i, name := range runs {
		row := strings.Fields(lines[1+i])
		if len(row) != 8 {
			t.Errorf("row %q: want 8 fields (EXPIRES is \"in …\")", lines[1+i])
			continue
		}
		id := getRun(t, ns, name).Status.Approvals[0].ID
		if diff := cmp.Diff([]string{ns, name, id, "scale_deployment", `{"name":"web","replicas":3}`}, row[:5]); diff != "" {
			t.Errorf("row %d (-want +got):\n%s", i, diff)
		}
		if _, err := time.ParseDuration(row[5]); err != nil && !strings.HasSuffix(row[5], "d") {
			t.Errorf("REQUESTED = %q, want an age", row[5])
		}
		if row[6] != "in" {
			t.Errorf("EXPIRES = %q, want a time to come", row[6]+" "+row[7])
		}
	}
	// Column alignment: every row starts its columns where the header does.
	for _, col := range []string{"RUN", "APPROVAL", "TOOL", "ARGS"} {
		at := strings.Index(lines[0], col)
		for _, l := range lines[1:] {
			if at >= len(l) || l[at-1] != ' ' || l[at] == ' ' {
				t.Errorf("column %s is not aligned at %d in %q", col, at, l)
			}
		}
	}
}

// createBulkRuns creates n runs of an Agent that does not exist in ns, as
// the admin, in parallel: they are admitted (GitOps order), never start and
// never wait for anyone — the finished or idle bulk of a busy namespace.
func createBulkRuns(t *testing.T, ns string, n int) {
	t.Helper()
	c := adminClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	jobs := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				run := &exagentv1.AgentRun{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("bulk-%05d", i)},
					Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "not-applied"},
						Input: "nothing to do", ServiceAccountName: "ops-agent"},
				}
				if err := c.Create(ctx, run); err != nil {
					select {
					case errs <- fmt.Errorf("creating %s: %w", run.Name, err):
					default:
					}
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case jobs <- i:
		case err := <-errs:
			close(jobs)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRunList"))
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d runs in %s; the namespace holds %d", n, time.Since(start).Round(time.Second), len(list.Items))
	if len(list.Items) != n+3 {
		t.Fatalf("the namespace holds %d runs, want %d", len(list.Items), n+3)
	}
}

var quietClients sync.Once

// adminClient is an in-process client as the admin, for setting up what
// would take kubectl minutes; it is not rate limited.
func adminClient(t *testing.T) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	quietClients.Do(func() { ctrllog.SetLogger(logr.Discard()) }) // controller-runtime's client wants a logger
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// watchProcess is a long-running kubectl whose stdout is read line by line.
type watchProcess struct {
	cancel context.CancelFunc
	cmd    *exec.Cmd
	out    chan string
	done   chan struct{}
}

// startWatch starts kubectl args as user and reads its stdout.
func startWatch(t *testing.T, user string, args ...string) *watchProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(s.k8sBin, "kubectl"), args...)
	cmd.Env = s.env(t, user)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &watchProcess{cancel: cancel, cmd: cmd, out: make(chan string, 64), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case w.out <- sc.Text():
			case <-ctx.Done(): // stopped: nobody reads any more
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() {
		w.stop(t)
		if stderr.Len() > 0 {
			t.Logf("%s stderr:\n%s", strings.Join(args, " "), stderr.String())
		}
	})
	return w
}

// lines waits for the next n lines, failing past timeout.
func (w *watchProcess) lines(t *testing.T, n int, timeout time.Duration) []string {
	t.Helper()
	deadline := time.After(timeout)
	var got []string
	for len(got) < n {
		select {
		case l := <-w.out:
			t.Logf("-w: %s", l)
			got = append(got, l)
		case <-w.done:
			t.Fatalf("the watch ended after %d of %d lines: %q", len(got), n, got)
		case <-deadline:
			t.Fatalf("only %d of %d lines within %s: %q", len(got), n, timeout, got)
		}
	}
	return got
}

// stop ends the watch (it runs until interrupted) and waits for it.
func (w *watchProcess) stop(t *testing.T) {
	w.cancel()
	select {
	case <-w.done:
	case <-time.After(time.Minute):
		t.Error("the watch did not end within a minute of being killed")
	}
	_ = w.cmd.Wait()
}
