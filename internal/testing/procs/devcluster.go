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
	"path/filepath"
	"strconv"
	"time"
)

// DevclusterSpec is how to start hack/devcluster (kube-apiserver and etcd
// on loopback, the CRDs, RBAC and webhook configuration installed).
type DevclusterSpec struct {
	// Bin is the built devcluster (Builder, Target Devcluster).
	Bin string
	// Dir is its --dir: DIR/kubeconfig is the admin's, DIR/NAME.kubeconfig
	// each user's, DIR/webhook the serving pair the webhooks must use.
	Dir string
	// Root is the repository (--root), DataDir its --data-dir when set.
	Root, DataDir string
	// WebhookPort is where the registered webhook configuration sends
	// admission (--webhook-port).
	WebhookPort int
	// Users are --user NAME[:GROUP,…] flags.
	Users []string
	// Env and Log are the child's (Spec).
	Env []string
	Log string
}

// StartDevcluster starts devcluster and waits (3 minutes: it may build
// nothing, but a loaded machine starts etcd slowly) for the line that is
// its contract (docs/architecture.md §9): "ready: KUBECONFIG=DIR/kubeconfig".
func StartDevcluster(s DevclusterSpec) (*Process, error) {
	args := []string{"--dir", s.Dir, "--root", s.Root, "--webhook-port", strconv.Itoa(s.WebhookPort)}
	if s.DataDir != "" {
		args = append(args, "--data-dir", s.DataDir)
	}
	for _, u := range s.Users {
		args = append(args, "--user", u)
	}
	p, err := Start(Spec{Name: "devcluster", Bin: s.Bin, Args: args, Env: s.Env, Log: s.Log})
	if err != nil {
		return nil, err
	}
	want := "ready: KUBECONFIG=" + filepath.Join(s.Dir, "kubeconfig")
	if err := p.WaitReady(3*time.Minute, Logged(want)); err != nil {
		_ = p.Stop(sigterm, 30*time.Second)
		return nil, fmt.Errorf("waiting for %q: %w", want, err)
	}
	return p, nil
}
