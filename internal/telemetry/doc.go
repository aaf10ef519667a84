// Package telemetry traces AgentRuns with OpenTelemetry: one trace per run
// (its W3C traceparent kept in the run's status), a span per attempt (a
// claim, from the commit that takes it to the one that releases it, so no
// span stays open across a human wait), `chat` and `execute_tool` child
// spans with the GenAI semantic-convention attributes, and decisions as
// span events. The OTLP/HTTP exporter is configured by the standard OTEL_*
// variables and is off unless an endpoint is set.
package telemetry
