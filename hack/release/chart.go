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
	"fmt"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// packageChart packages the chart into dist as exagent-X.Y.Z.tgz, with
// version X.Y.Z and appVersion vX.Y.Z (the image tag its templates
// default to), and returns the file's name.
func packageChart(dir, dist, version string) (string, error) {
	c, err := loader.Load(dir)
	if err != nil {
		return "", fmt.Errorf("loading the chart: %w", err)
	}
	c.Metadata.Version = strings.TrimPrefix(version, "v")
	c.Metadata.AppVersion = version
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("the chart: %w", err)
	}
	path, err := chartutil.Save(c, dist)
	if err != nil {
		return "", fmt.Errorf("packaging the chart: %w", err)
	}
	return filepath.Base(path), nil
}
