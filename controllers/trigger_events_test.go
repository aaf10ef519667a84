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

package controllers_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/triggers"
)

// managerUser is an apiserver identity with exactly the manager's
// ClusterRole (config/rbac/role.yaml, as `make manifests` writes it): it
// may impersonate ServiceAccounts and review access, and may not read
// events — so a watch that works was made as the ServiceAccount.
const managerUser = "exagent-manager-under-test"

var (
	managerUserOnce sync.Once
	managerUserCfg  *envtest.AuthenticatedUser
	managerUserErr  error
)

// asManager is the rest config of managerUser, made once per package.
func asManager(t *testing.T) *envtest.AuthenticatedUser {
	t.Helper()
	managerUserOnce.Do(func() {
		managerUserErr = func() error {
			b, err := os.ReadFile("../config/rbac/role.yaml")
			if err != nil {
				return err
			}
			var role rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict([]byte(strings.TrimPrefix(string(b), "---\n")), &role); err != nil {
				return err
			}
			role.ObjectMeta = metav1.ObjectMeta{Name: managerUser}
			ctx := context.Background()
			for _, o := range []client.Object{&role, binding(managerUser, managerUser, managerUser)} {
				if err := env().Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
			}
			managerUserCfg, err = env().AddUser(envtest.User{Name: managerUser}, nil)
			return err
		}()
	})
	if managerUserErr != nil {
		t.Fatalf("the manager's identity: %v", managerUserErr)
	}
	return managerUserCfg
}

// startEventSources starts a manager as managerUser (its cache of this
// namespace) running only the Kubernetes Event watcher.
func (h *harness) startEventSources(t *testing.T) *controllers.EventSources {
	t.Helper()
	u := asManager(t)
	cfg := u.Config()
	cfg.QPS, cfg.Burst = 200, 400
	mgr, err := ctrl.NewManager(cfg, h.managerOptions())
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	runs := &controllers.TriggerRuns{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
	s := &controllers.EventSources{Cache: mgr.GetCache(), Client: mgr.GetClient(), Config: mgr.GetConfig(), Lookup: runs,
		Handler: &triggers.Handler{Lookup: runs, Creator: runs}, Log: ctrl.Log.WithName("trigger-events")}
	if err := mgr.Add(s); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

// waitFor polls cond until it holds (generous: a loaded machine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, waitTimeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// kubeEvent is a core/v1 Event about an object of the namespace, as a
// kubelet writes one.
func (h *harness) kubeEvent(name, kind, object string, uid types.UID, reason string) *corev1.Event {
	now := metav1.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: h.ns, Name: object, UID: uid, APIVersion: "v1",
			FieldPath: "spec.containers{app}"},
		Reason: reason, Type: corev1.EventTypeWarning, Message: "Back-off restarting failed container app in pod " + object,
		Count: 1, FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "kubelet"},
	}
}

// TestTriggerEvents: a kubernetesEvents trigger reads core/v1 Events as
// its ServiceAccount, through a manager that may not read events itself:
// a pod's repeated BackOff Events make one run naming the pod, an Event
// of another reason or kind none, a second pod a second run. A trigger
// whose ServiceAccount may not read events watches nothing, says why, and
// makes no run of the same Events. A changed trigger watches with its new
// selectors; a deleted one's watch stops.
func TestTriggerEvents(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "events-reader", Namespace: h.ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody", Namespace: h.ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "events-reader", Namespace: h.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list", "watch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "events-reader", Namespace: h.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "events-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "events-reader", Namespace: h.ns}}},
	} {
		if err := h.c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	events := func(verb string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: h.ns, Verb: verb, Resource: "events"}
	}
	waitAllowed(t, h.ns, "events-reader", events("list"), events("watch"))
	// The manager itself may not read events: only impersonation can.
	self := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: managerUser,
		Groups: []string{"system:authenticated"}, ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: h.ns, Verb: "list", Resource: "events"}}}
	if err := h.c.Create(ctx, self); err != nil || self.Status.Allowed {
		t.Fatalf("the manager's identity may list events (%v): the test would prove nothing", err)
	}

	pods := map[string]types.UID{}
	for _, name := range []string{"web-1", "web-2"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}}}
		if err := h.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		pods[name] = p.UID
	}
	trig := func(name, sa string) *exagentv1.AgentTrigger {
		return &exagentv1.AgentTrigger{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Spec: exagentv1.AgentTriggerSpec{
			Source: &exagentv1.TriggerSource{KubernetesEvents: &exagentv1.KubernetesEventsTriggerSource{ServiceAccountName: sa,
				Reasons: []string{"BackOff"}, InvolvedObject: &exagentv1.InvolvedObjectSelector{Kinds: []string{"Pod"}}}},
			RunTemplate: exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: "triage"}, Input: "Find why this crashes:"},
			Input:       `event.involvedObject.kind + " " + event.involvedObject.namespace + "/" + event.involvedObject.name + " (" + event.involvedObject.uid + "): " + event.reason + " x" + string(event.count) + ": " + event.message`,
		}}
	}
	crash, blind := trig("crashloops", "events-reader"), trig("blind", "nobody")
	for _, at := range []*exagentv1.AgentTrigger{crash, blind} {
		setBy(at, "dave")
		if err := h.c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	crashKey, blindKey := client.ObjectKeyFromObject(crash), client.ObjectKeyFromObject(blind)

	s := h.startEventSources(t)
	waitFor(t, "the crashloops trigger's watch", func() bool { return s.Watches(crashKey) == 1 })
	waitFor(t, "the blind trigger's problem", func() bool { return len(s.Problems(blindKey)) == 1 })
	if p := s.Problems(blindKey)[0]; !strings.Contains(p, "namespace "+h.ns) || !strings.Contains(p, "list and watch events") ||
		!strings.Contains(p, "nobody") {
		t.Errorf("the blind trigger's problem %q does not name the namespace, the missing rights and the ServiceAccount", p)
	}
	if n := s.Watches(blindKey); n != 0 {
		t.Errorf("the blind trigger runs %d watches, want none", n)
	}
	if p := s.Problems(crashKey); len(p) != 0 {
		t.Errorf("the crashloops trigger has problems: %q", p)
	}

	create := func(ev *corev1.Event) {
		t.Helper()
		if err := h.c.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	// A crash-looping pod: BackOff Events, one of them repeated in place.
	repeated := h.kubeEvent("web-1.a", "Pod", "web-1", pods["web-1"], "BackOff")
	create(repeated)
	create(h.kubeEvent("web-1.b", "Pod", "web-1", pods["web-1"], "BackOff"))
	repeated.Count, repeated.LastTimestamp = 2, metav1.Now()
	if err := h.c.Update(ctx, repeated); err != nil {
		t.Fatal(err)
	}
	create(h.kubeEvent("web-1.c", "Pod", "web-1", pods["web-1"], "BackOff"))
	waitFor(t, "the run of web-1's BackOff", func() bool { return len(h.triggerRuns("crashloops")) >= 1 })

	// What the trigger does not select, then a second pod's BackOff: its
	// run, delivered after them, shows they made none.
	create(h.kubeEvent("web-2.pulled", "Pod", "web-2", pods["web-2"], "Pulled"))
	create(h.kubeEvent("web-2.deploy", "Deployment", "web-2", "", "BackOff"))
	create(h.kubeEvent("web-2.a", "Pod", "web-2", pods["web-2"], "BackOff"))
	waitFor(t, "the run of web-2's BackOff", func() bool { return len(h.triggerRuns("crashloops")) >= 2 })

	runs := h.triggerRuns("crashloops")
	var inputs []string
	for _, r := range runs {
		inputs = append(inputs, r.Spec.Input)
	}
	slices.Sort(inputs)
	want := []string{
		"Find why this crashes:\n\nPod " + h.ns + "/web-1 (" + string(pods["web-1"]) + "): BackOff x",
		"Find why this crashes:\n\nPod " + h.ns + "/web-2 (" + string(pods["web-2"]) + "): BackOff x1: Back-off restarting failed container app in pod web-2",
	}
	if len(inputs) != 2 || !strings.HasPrefix(inputs[0], want[0]) || inputs[1] != want[1] {
		t.Fatalf("the runs' inputs:\n%q\nwant one for web-1's BackOff and one for web-2's:\n%q", inputs, want)
	}
	if got := s.Stats(crashKey); got != (controllers.EventSourceStats{}) {
		t.Errorf("the crashloops trigger dropped or rejected Events: %+v", got)
	}
	if n := len(h.triggerRuns("blind")); n != 0 {
		t.Errorf("the blind trigger made %d runs of Events its ServiceAccount may not read", n)
	}

	// A new generation watches afresh: with reasons [Unhealthy], the
	// field selector that kept Unhealthy Events away is gone.
	if err := h.c.Get(ctx, crashKey, crash); err != nil {
		t.Fatal(err)
	}
	crash.Spec.Source.KubernetesEvents.Reasons = []string{"Unhealthy"}
	if err := h.c.Update(ctx, crash); err != nil {
		t.Fatal(err)
	}
	create(h.kubeEvent("web-1.unhealthy", "Pod", "web-1", pods["web-1"], "Unhealthy"))
	waitFor(t, "the run of web-1's Unhealthy", func() bool { return len(h.triggerRuns("crashloops")) >= 3 })

	// Deleting the trigger stops its watch.
	if err := h.c.Delete(ctx, crash); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted trigger's watch to stop", func() bool {
		return s.Watches(crashKey) == 0 && s.Watches(types.NamespacedName{}) == 0
	})
	if p := s.Problems(crashKey); p != nil {
		t.Errorf("a deleted trigger has problems: %q", p)
	}
}
