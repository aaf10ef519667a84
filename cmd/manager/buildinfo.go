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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/exagent-io/exagent/internal/version"
)

// registerBuildInfo registers exagent_build_info: always 1, labelled with
// the build, so that a dashboard or an alert tells which version each
// replica runs (the *_build_info convention of Prometheus' own exporters;
// join on it to break any series down by version).
func registerBuildInfo(reg prometheus.Registerer, i version.Info) error {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "exagent_build_info",
		Help:        "Always 1: the version, commit and Go version of this manager binary, as labels.",
		ConstLabels: prometheus.Labels{"version": i.Version, "commit": i.Commit, "goversion": i.GoVersion},
	})
	g.Set(1)
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("registering exagent_build_info: %w", err)
	}
	return nil
}
