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

// Package telemetry traces AgentRuns with OpenTelemetry: one trace per run
// (its W3C traceparent kept in the run's status), a span per attempt (a
// claim, from the commit that takes it to the one that releases it, so no
// span stays open across a human wait), `chat` and `execute_tool` child
// spans with the GenAI semantic-convention attributes, and decisions as
// span events. The OTLP/HTTP exporter is configured by the standard OTEL_*
// variables and is off unless an endpoint is set.
package telemetry
