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

package chart

import (
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// TestChartLints: helm lint's rules (Chart.yaml, values and their schema,
// every template rendered and parsed as Kubernetes YAML) find nothing worth
// a warning in the chart, for each value set.
func TestChartLints(t *testing.T) {
	kube := &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	for name, vs := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			values := vs.values
			if values == nil {
				values = map[string]any{}
			}
			l := lint.AllWithKubeVersion(chartDir(), values, releaseNamespace, kube)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				}
			}
		})
	}
}
