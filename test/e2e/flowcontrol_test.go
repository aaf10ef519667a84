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
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/exagent-io/exagent/internal/testing/procs"
)

// TestFlowSchemasClassifyTheManager installs config/default's API Priority
// and Fairness objects for real and asks the apiserver, as the manager's
// ServiceAccount, which FlowSchema classified each kind of request the
// decision and sealing paths make: the X-Kubernetes-PF-FlowSchema-UID
// response header names it (set before authorization, so a request the
// impersonated ServiceAccount may not make still shows its classification).
// The segment creates a seal commits after and the SubjectAccessReviews a
// decision waits on must share the run commits' priority level; the
// manager's reads stay where they were.
func TestFlowSchemasClassifyTheManager(t *testing.T) {
	cmd := exec.Command(kustomizeBin(t), "build", "config/default")
	cmd.Dir = s.root
	built, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	var apf []string
	for _, o := range objects(t, built) {
		if k := o.GetKind(); k == "FlowSchema" || k == "PriorityLevelConfiguration" {
			b, err := yaml.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			apf = append(apf, string(b))
		}
	}
	stream := strings.Join(apf, "---\n")
	must(t, "", stream, "apply", "-f", "-")
	t.Cleanup(func() { kubectl(t, "", stream, "delete", "-f", "-") })
	uid := func(name string) string {
		return must(t, "", "", "get", "flowschema", name, "-o", "jsonpath={.metadata.uid}")
	}
	commits := uid("exagent-manager-run-commits")

	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:exagent-system:exagent-manager"}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	classify := func(method, path, body string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, cfg.Host+path, bytes.NewBufferString(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		_ = resp.Body.Close()
		got := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)
		if got == "" {
			return "", fmt.Errorf("%s %s: no %s header (status %d)", method, path, flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, resp.StatusCode)
		}
		return got, nil
	}
	const runs = "/apis/exagent.io/v1beta1/namespaces/e2e-apf/agentruns"
	cases := map[string]struct {
		method, path, body string
		inCommits          bool
	}{
		"a run's status commit": {method: "PUT", path: runs + "/r/status?dryRun=All", body: "{}", inCommits: true},
		"a segment create": {method: "POST", path: "/apis/exagent.io/v1beta1/namespaces/e2e-apf/agentrunsegments?dryRun=All",
			body: "{}", inCommits: true},
		"a SubjectAccessReview": {method: "POST", path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", body: "{}", inCommits: true},
		"a list of runs":        {method: "GET", path: runs},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The apiserver's APF configuration follows the objects by a watch.
			var got string
			err := procs.Poll(time.Minute, func() (bool, error) {
				var err error
				if got, err = classify(tc.method, tc.path, tc.body); err != nil {
					return false, err
				}
				return (got == commits) == tc.inCommits, nil
			})
			if err != nil {
				t.Errorf("%s %s is classified by FlowSchema uid %q; exagent-manager-run-commits is %q (in it: want %v): %v",
					tc.method, tc.path, got, commits, tc.inCommits, err)
			}
		})
	}
}
