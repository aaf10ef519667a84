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
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// installYAMLName is the one-file install: kubectl apply --server-side -f.
const installYAMLName = "install.yaml"

// imageName is the manager image config/default names.
const imageName = "ghcr.io/exagent-io/exagent"

// writeInstallYAML writes kustomize's build of config/default with the
// manager image tagged with the version, through a throwaway overlay (as
// make deploy does), and refuses an output that still runs :latest.
func writeInstallYAML(root, dst, version string) error {
	overlay, err := os.MkdirTemp(filepath.Dir(dst), ".install-overlay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(overlay)
	base, err := filepath.Abs(filepath.Join(root, "config", "default"))
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(overlay)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(abs, base)
	if err != nil {
		return err
	}
	k := fmt.Sprintf("resources:\n- %s\nimages:\n- name: %s\n  newTag: %s\n", filepath.ToSlash(rel), imageName, version)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		return err
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		return fmt.Errorf("kustomize build config/default: %w", err)
	}
	b, err := res.AsYaml()
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte("image: "+imageName+":"+version+"\n")) || bytes.Contains(b, []byte(":latest")) {
		return fmt.Errorf("install.yaml does not run %s:%s (and only it)", imageName, version)
	}
	header := fmt.Sprintf("# exagent %s: kubectl apply --server-side -f install.yaml (needs cert-manager; docs/install.md).\n# kustomize build config/default with the image %s:%s.\n", version, imageName, version)
	return os.WriteFile(dst, append([]byte(header), b...), 0o644)
}
