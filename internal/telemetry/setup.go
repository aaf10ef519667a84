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

package telemetry

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Enabled reports whether the OTEL_* environment asks for traces: an OTLP
// endpoint is set, the SDK is not disabled and the traces exporter is not
// "none".
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv returns the process's tracer: OTLP/HTTP, configured by the
// standard OTEL_* variables (endpoint, headers, timeout, sampler,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), or a Tracer that does
// nothing when they do not ask for traces. Call the shutdown function when
// the process stops: it flushes the spans still buffered.
func FromEnv(ctx context.Context, holder string) (*Tracer, func(context.Context) error, error) {
	if !Enabled(os.Getenv) {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName("exagent-manager"), semconv.ServiceInstanceID(holder)))
	if err != nil {
		return nil, nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := NewProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return New(tp), tp.Shutdown, nil
}

// NewProvider is an SDK tracer provider whose ID generator lets the first
// attempt of a run take the span id its traceparent announced (so the
// trace has a root), with opts (span processors, resource, sampler).
func NewProvider(opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithIDGenerator(idGenerator{})}, opts...)...)
}

// presetIDs, in a context, are the ids the next root span must take.
type presetIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

type presetKey struct{}

// idGenerator hands out the preset ids of the context, random ones otherwise.
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if p, ok := ctx.Value(presetKey{}).(presetIDs); ok {
		return p.trace, p.span
	}
	var t trace.TraceID
	var s trace.SpanID
	_, _ = rand.Read(t[:])
	_, _ = rand.Read(s[:])
	return t, s
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	var s trace.SpanID
	_, _ = rand.Read(s[:])
	return s
}
