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

package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// LocalControllers are the kube-controller-manager controllers a local
// control plane runs: the garbage collector, which deletes what a deleted
// object owned (a run's segments, decisions and child runs), the
// namespace controller, which empties a namespace being deleted, and the
// storage version migrator, which carries out the StorageVersionMigrations
// the manager creates after an upgrade (internal/crdconversion; it needs
// the garbage collector's informers). Every real cluster runs them;
// exagent leaves that work to them.
var LocalControllers = []string{"garbagecollector", "namespace", "storage-version-migrator-controller"}

// controllerManagerUser is the identity kube-controller-manager runs as:
// the name the apiserver's bootstrap RBAC gives the controller manager,
// bound besides to the roles of the controllers it runs (on a cluster each
// runs as its own ServiceAccount; here they share one identity).
const controllerManagerUser = "system:kube-controller-manager"

// controllerRoles are the bootstrap ClusterRoles of LocalControllers.
var controllerRoles = []string{"system:controller:generic-garbage-collector", "system:controller:namespace-controller",
	"system:controller:storage-version-migrator-controller"}

// ControllerManager is a kube-controller-manager process beside a control
// plane started by envtest.
type ControllerManager struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	dir  string
}

// StartControllerManager starts kube-controller-manager (from binDir, as
// hack/k8s-binaries.sh builds it) against cp with LocalControllers, as
// controllerManagerUser bound to their roles through admin. Its kubeconfig
// goes to dir (created; removed by Stop) and its log to out (nil:
// discarded). It returns once the process runs; the garbage collector
// starts deleting once its informers synced, which a test waits for as for
// any eventual state.
func StartControllerManager(ctx context.Context, cp *envtest.ControlPlane, admin client.Client, binDir, dir string, out io.Writer) (*ControllerManager, error) {
	bin := filepath.Join(binDir, "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("kube-controller-manager is not in %s (run hack/k8s-binaries.sh): %w", binDir, err)
	}
	if err := bindControllerRoles(ctx, admin); err != nil {
		return nil, err
	}
	user, err := cp.AddUser(envtest.User{Name: controllerManagerUser}, nil)
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager's user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("writing the controller manager's kubeconfig: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	path := filepath.Join(dir, "kube-controller-manager.kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	if out == nil {
		out = io.Discard
	}
	cmd := exec.Command(bin, controllerManagerArgs(path)...)
	cmd.Stdout, cmd.Stderr = out, out
	// Killed with the process that started it (a test binary at its
	// timeout, a devcluster killed by a chaos test): no controller manager
	// outlives its control plane.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	m := &ControllerManager{cmd: cmd, done: make(chan struct{}), dir: dir}
	go func() {
		m.err = cmd.Wait()
		close(m.done)
	}()
	return m, nil
}

// controllerManagerArgs runs LocalControllers only, as one process with no
// leader election and no serving port of its own.
func controllerManagerArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(LocalControllers, ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--secure-port=0",
		// The garbage collector's informers list every resource; a local
		// control plane holds little, a few workers are plenty.
		"--concurrent-gc-syncs=5",
		"--concurrent-namespace-syncs=2",
	}
}

// bindControllerRoles binds controllerManagerUser to controllerRoles.
func bindControllerRoles(ctx context.Context, c client.Client) error {
	for _, role := range controllerRoles {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "exagent-local:" + strings.TrimPrefix(role, "system:controller:")},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: controllerManagerUser}},
		}
		if err := c.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("binding %s to %s: %w", controllerManagerUser, role, err)
		}
	}
	return nil
}

// Exited reports whether the process ended, and how.
func (m *ControllerManager) Exited() (bool, error) {
	select {
	case <-m.done:
		return true, m.err
	default:
		return false, nil
	}
}

// Stop ends the process (SIGTERM, then SIGKILL after 10s) and removes its
// folder.
func (m *ControllerManager) Stop() error {
	if m == nil {
		return nil
	}
	select {
	case <-m.done:
	default:
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.done
		}
	}
	return errors.Join(os.RemoveAll(m.dir))
}
