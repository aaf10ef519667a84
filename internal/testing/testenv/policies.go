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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// PolicyDir holds the admission policies of exagent's API in the
// repository: the ValidatingAdmissionPolicies that keep an AgentRun's and
// an ApprovalDecision's spec immutable, with
// their bindings. They belong with the CRDs — every control plane the
// tests and the devcluster start installs both.
var PolicyDir = filepath.Join("config", "policy")

// InstallPolicies creates the policies and bindings of root's PolicyDir
// (an existing one is left as it is), waits until the apiserver enforces
// them where that can be seen, and returns how many it created.
func InstallPolicies(ctx context.Context, c client.Client, root string) (int, error) {
	files, err := filepath.Glob(filepath.Join(root, PolicyDir, "*-spec.yaml"))
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("no admission policies in %s (%v)", filepath.Join(root, PolicyDir), err)
	}
	n := 0
	for _, f := range files {
		m, err := installPolicyFile(ctx, c, f)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, waitEnforced(ctx, c)
}

// installPolicyFile creates the objects of one policy file.
func installPolicyFile(ctx context.Context, c client.Client, file string) (int, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("reading the admission policies: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	n := 0
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, fmt.Errorf("%s: %w", file, err)
		}
		if len(doc) == 0 {
			continue
		}
		var o client.Object
		switch kind, _ := doc["kind"].(string); kind {
		case "ValidatingAdmissionPolicy":
			o = &admissionv1.ValidatingAdmissionPolicy{}
		case "ValidatingAdmissionPolicyBinding":
			o = &admissionv1.ValidatingAdmissionPolicyBinding{}
		default:
			return n, fmt.Errorf("%s: unexpected kind %q", file, kind)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(doc, o); err != nil {
			return n, fmt.Errorf("%s: %w", file, err)
		}
		if err := c.Create(ctx, o); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return n, fmt.Errorf("installing %s %s: %w", doc["kind"], o.GetName(), err)
		}
		n++
	}
}

// waitEnforced waits until the apiserver's admission plugin refuses what
// each policy refuses: a changed spec, seen on a probe object created in
// namespace default and updated with a server-side dry run, then deleted.
// The apiserver loads a new policy from its informer asynchronously, and a
// test that updates a spec at once could otherwise get through. The
// policies' status says nothing here. Where a mutating webhook that
// nothing serves yet comes first (envtest with webhooks, the devcluster
// before its manager starts), the probe cannot be created: the policy is
// then taken as loaded by the time the webhook is served.
func waitEnforced(ctx context.Context, c client.Client) error {
	probes := map[string]struct {
		obj    func() client.Object
		change func(client.Object)
	}{
		"exagent-agentrun-spec": {
			obj: func() client.Object {
				return &exagentv1.AgentRun{
					ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: "policy-probe-"},
					Spec:       exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "policy-probe"}, Input: "probe"},
				}
			},
			change: func(o client.Object) { o.(*exagentv1.AgentRun).Spec.Input = "changed" },
		},
		"exagent-approvaldecision-spec": {
			obj: func() client.Object {
				return &exagentv1.ApprovalDecision{
					ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: "policy-probe-"},
					Spec: exagentv1.ApprovalDecisionSpec{RunRef: exagentv1.LocalObjectReference{Name: "policy-probe"},
						Decision: exagentv1.DecisionCancel},
				}
			},
			change: func(o client.Object) { o.(*exagentv1.ApprovalDecision).Spec.Reason = "changed" },
		},
	}
	for policy, p := range probes {
		probe := p.obj()
		if err := c.Create(ctx, probe); err != nil {
			if strings.Contains(err.Error(), "failed calling webhook") {
				continue
			}
			return fmt.Errorf("creating a probe of the admission policy %s: %w", policy, err)
		}
		var last error
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			changed := probe.DeepCopyObject().(client.Object)
			p.change(changed)
			last = c.Update(ctx, changed, client.DryRunAll)
			return last != nil && strings.Contains(last.Error(), policy), nil
		})
		if derr := c.Delete(ctx, probe); derr != nil && !apierrors.IsNotFound(derr) {
			return fmt.Errorf("deleting the probe of the admission policy %s: %w", policy, derr)
		}
		if err != nil {
			return fmt.Errorf("the admission policy %s is not enforced a minute after its install (a dry-run update it refuses: %v): %w", policy, last, err)
		}
	}
	return nil
}
