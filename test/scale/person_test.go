//go:build scale

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

package scale

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/exagent-io/exagent/internal/testing/procs"
)

// listAndInbox times what alice sees of the waiting runs, with her own
// certificate: `kubectl approve list -A` (the real plugin binary, one
// paged list the apiserver filters by phase) and the approver's page
// (`kubectl approve ui -A`, the inbox's HTML over HTTP, its session
// started from the URL the plugin printed, as a browser would).
func (s *scaleRun) listAndInbox() {
	plugin, kc := s.pl.bin.Path("kubectl-approve"), s.pl.kubeconfig(alice)
	var lists []time.Duration
	for range *flagListRuns {
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Minute)
		cmd := exec.CommandContext(ctx, plugin, "list", "-A", "--kubeconfig", kc)
		cmd.Env = managerEnv()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t0 := time.Now()
		out, err := cmd.Output()
		d := time.Since(t0)
		cancel()
		if err != nil {
			s.fatalf("kubectl approve list -A as %s: %v\n%s", alice, err, stderr.String())
		}
		if rows := len(nonEmptyLines(out)) - 1; rows != s.sz.waiting {
			s.fatalf("kubectl approve list -A printed %d approvals, want %d:\n%s", rows, s.sz.waiting, head(out, 10))
		}
		lists = append(lists, d)
	}
	s.rep.list = median(lists)
	s.logf("kubectl approve list -A as %s: %d approvals in %v (median %s)", alice, s.sz.waiting, rounded(lists), s.rep.list.Round(time.Millisecond))

	ui, err := procs.Start(procs.Spec{Name: "kubectl approve ui", Bin: plugin,
		Args: []string{"ui", "-A", "--port", "0", "--kubeconfig", kc}, Env: managerEnv(),
		Log: filepath.Join(s.pl.dir, "kubectl-approve-ui.log")})
	if err != nil {
		s.fatalf("%v", err)
	}
	defer func() { _ = ui.Stop(syscall.SIGTERM, 30*time.Second) }()
	var url string
	if err := poll(s.ctx, "the URL kubectl approve ui prints", 100*time.Millisecond, time.Minute, func() (bool, error) {
		if err := ui.Alive(); err != nil {
			return false, err
		}
		raw, _ := os.ReadFile(ui.Log)
		for _, l := range strings.Split(string(raw), "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "http://") && strings.Contains(l, "?") {
				url = l
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		s.fatalf("%v", err)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		s.fatalf("%v", err)
	}
	hc := &http.Client{Jar: jar, Timeout: 5 * time.Minute}
	get := func(u string) (time.Duration, int) {
		t0 := time.Now()
		resp, err := hc.Get(u)
		if err != nil {
			s.fatalf("GET the inbox: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if err != nil || resp.StatusCode != http.StatusOK {
			s.fatalf("GET the inbox: %s %v: %s", resp.Status, err, head(body, 5))
		}
		return d, bytes.Count(body, []byte(`id="row-`))
	}
	// The first visit exchanges the printed token for a session cookie
	// (a redirect), then renders the inbox.
	first, rows := get(url)
	if rows != s.sz.waiting {
		s.fatalf("the inbox shows %d approvals, want %d", rows, s.sz.waiting)
	}
	base := url[:strings.Index(url, "?")]
	var pages []time.Duration
	for range *flagListRuns {
		d, _ := get(base)
		pages = append(pages, d)
	}
	s.rep.inbox, s.rep.inboxFirst = median(pages), first
	s.logf("the inbox page (kubectl approve ui -A) as %s: %d approvals, first visit %s, then %v (median %s)",
		alice, rows, first.Round(time.Millisecond), rounded(pages), s.rep.inbox.Round(time.Millisecond))
}

func nonEmptyLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// head is the first n lines of b.
func head(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func rounded(ds []time.Duration) string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Round(time.Millisecond).String())
	}
	return fmt.Sprintf("[%s]", strings.Join(out, " "))
}
