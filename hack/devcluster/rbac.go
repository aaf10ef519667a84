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
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// installClusterRoles creates (or updates) every ClusterRole of dir's YAML
// files: the shipped exagent-viewer/editor/approver/resolver roles users are
// bound to, and the manager's. The manager's bindings and ServiceAccount
// come from installManagerRBAC; users are bound by whoever uses the
// cluster (config/samples does it for the demo).
func installClusterRoles(ctx context.Context, c client.Client, dir string) (int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, file := range files {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		roles, err := readClusterRoles(file)
		if err != nil {
			return n, err
		}
		for _, role := range roles {
			if err := createOrUpdateObject(ctx, c, role); err != nil {
				return n, fmt.Errorf("installing ClusterRole %s from %s: %w", role.Name, file, err)
			}
			n++
		}
	}
	return n, nil
}

func readClusterRoles(file string) ([]*rbacv1.ClusterRole, error) {
	docs, err := readYAMLDocs(file)
	if err != nil {
		return nil, err
	}
	var out []*rbacv1.ClusterRole
	for _, doc := range docs {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal(doc, &role); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", file, err)
		}
		if role.Kind == "ClusterRole" && role.APIVersion == rbacv1.SchemeGroupVersion.String() {
			out = append(out, &role)
		}
	}
	return out, nil
}

// readYAMLDocs reads the non-empty YAML documents of file.
func readYAMLDocs(file string) ([][]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		if len(strings.TrimSpace(string(doc))) > 0 {
			out = append(out, doc)
		}
	}
}
