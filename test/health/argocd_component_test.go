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

package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// TestArgoCDComponent: config/argocd, included as a kustomize component in
// an Argo CD installation, adds each health script (AgentRun, Agent,
// ApprovalDecision) to argocd-cm under the key Argo CD reads, and keeps
// the ConfigMap's other settings.
func TestArgoCDComponent(t *testing.T) {
	dir := t.TempDir()
	component, err := filepath.Rel(dir, filepath.Join(testenv.RepoRoot(), "config", "argocd"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata: {url: \"https://argo.example\"}\n",
		"kustomization.yaml": "resources: [cm.yaml]\ncomponents: [" + component + "]\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone // the component lives outside the folder, as a remote one would
	res, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"url: https://argo.example", "name: argocd-cm\n"}
	for kind, file := range map[string]string{"AgentRun": "health.lua", "Agent": "health-agent.lua", "ApprovalDecision": "health-approvaldecision.lua"} {
		script, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "argocd", file))
		if err != nil {
			t.Fatal(err)
		}
		firstLine, _, _ := strings.Cut(string(script), "\n")
		want = append(want, "resource.customizations.health.exagent.io_"+kind+": |", firstLine)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("built argocd-cm lacks %q:\n%s", w, out)
		}
	}
}
