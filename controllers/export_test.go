package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewRunsCollector is the run gauges' collector over reader, for tests
// that read the gauges of their own namespace (the process registers one
// collector only, over the first manager's cache).
func NewRunsCollector(reader client.Reader) prometheus.Collector {
	return runsCollector{reader: reader}
}
