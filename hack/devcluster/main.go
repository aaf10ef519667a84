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
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// userFlag collects repeated --user NAME[:GROUP,…] values.
type userFlag []user

// user is one client-certificate identity to provision.
type user struct {
	Name   string
	Groups []string
}

func (u *userFlag) String() string {
	parts := make([]string, 0, len(*u))
	for _, x := range *u {
		parts = append(parts, x.Name)
	}
	return strings.Join(parts, ",")
}

func (u *userFlag) Set(v string) error {
	parsed, err := parseUser(v)
	if err != nil {
		return err
	}
	*u = append(*u, parsed)
	return nil
}

// parseUser reads NAME[:GROUP,…]. The name becomes the file name
// DIR/NAME.kubeconfig, so it may not contain a path separator.
func parseUser(v string) (user, error) {
	name, groups, _ := strings.Cut(v, ":")
	name = strings.TrimSpace(name)
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return user{}, fmt.Errorf("invalid --user %q: want NAME[:GROUP,…] with a NAME usable as a file name", v)
	}
	switch name {
	case "kubeconfig":
		return user{}, fmt.Errorf("invalid --user %q: the name %q is the admin's file", v, name)
	case strings.TrimSuffix(managerKubeconfig, ".kubeconfig"):
		return user{}, fmt.Errorf("invalid --user %q: the name %q is the manager's file", v, name)
	}
	u := user{Name: name}
	for _, g := range strings.Split(groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			u.Groups = append(u.Groups, g)
		}
	}
	return u, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster: error:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		opts  options
		users userFlag
	)
	flag.StringVar(&opts.Dir, "dir", "", "Folder for kubeconfigs, webhook certificates and logs (default REPO/.cache/devcluster); DIR/kubeconfig is the admin's.")
	flag.Var(&users, "user", "Provision a client-certificate user: NAME[:GROUP,…], repeatable; writes DIR/NAME.kubeconfig (DIR/manager.kubeconfig is the manager's own identity).")
	flag.StringVar(&opts.WebhookHost, "webhook-host", "127.0.0.1", "Host the manager serves the admission webhooks on.")
	flag.IntVar(&opts.WebhookPort, "webhook-port", 9443, "Port the manager serves the admission webhooks on (the manager's --webhook-port).")
	flag.StringVar(&opts.ManagerNamespace, "manager-namespace", "exagent-system", "Namespace created for the manager's own objects (its decision-signing Secret) and its ServiceAccount, whose identity DIR/manager.kubeconfig carries.")
	flag.StringVar(&opts.DataDir, "data-dir", "", "Keep etcd's data, the apiserver's address and certificates, the client CA and the webhook serving pair in this folder: "+
		"started again on it, the control plane serves the same objects to the same kubeconfigs and webhook (default: nothing is kept).")
	flag.StringVar(&opts.Root, "root", "", "Repository root holding config/ (default: found from the working directory).")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	opts.Users = users

	if opts.Root == "" {
		root, err := findRepoRoot()
		if err != nil {
			return err
		}
		opts.Root = root
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Join(opts.Root, ".cache", "devcluster")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return fmt.Errorf("resolving --dir: %w", err)
	}
	opts.Dir = dir
	if opts.DataDir != "" {
		if opts.DataDir, err = filepath.Abs(opts.DataDir); err != nil {
			return fmt.Errorf("resolving --data-dir: %w", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	c, err := start(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Printf("ready: KUBECONFIG=%s\n", filepath.Join(opts.Dir, "kubeconfig"))
	<-ctx.Done()
	logf("stopping")
	if err := c.Stop(); err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	logf("stopped")
	return nil
}

// findRepoRoot walks up from the working directory to the go.mod of this module.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/exagent-io/exagent\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the exagent repository: run from it or pass --root")
		}
		dir = parent
	}
}

// logf reports progress on stderr; stdout carries only the ready line.
func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "devcluster: "+format+"\n", a...)
}
