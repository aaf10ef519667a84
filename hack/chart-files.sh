#!/usr/bin/env bash
# make manifests (after controller-gen): copy into charts/exagent what the
# chart takes from config/ byte for byte, so the chart cannot drift from it:
#   crds/                         config/crd/bases (Helm installs crds/ first)
#   files/config/rbac/            the ClusterRoles and the manager's Role
#                                 (role.yaml is generated from the markers)
#   files/config/webhook/         the generated webhook configurations
#   files/config/namespaced-install/  the namespace-scoped mode's Roles
#   files/config/flowcontrol/     API Priority and Fairness for the manager
#   files/config/policy/          the admission policies keeping runs' and
#                                 decisions' specs immutable
#   files/config/prometheus/      the ServiceMonitor and the alert rules
#                                 (their {{ $labels }} are Prometheus
#                                 templates, not Helm's)
# The templates read files/ with .Files.Get; make verify fails when a copy
# differs from config/, and test/chart TestChartMatchesKustomize when the
# rendered chart differs from kustomize's build of config/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

chart=charts/exagent
rm -rf "$chart/crds" "$chart/files/config"
mkdir -p "$chart/crds" "$chart/files/config/rbac" "$chart/files/config/webhook" \
  "$chart/files/config/namespaced-install/served-namespace" "$chart/files/config/flowcontrol" \
  "$chart/files/config/policy" \
  "$chart/files/config/prometheus"
cp config/crd/bases/*.yaml "$chart/crds/"
cp config/rbac/role.yaml config/rbac/*_role.yaml "$chart/files/config/rbac/"
cp config/webhook/manifests.yaml "$chart/files/config/webhook/"
cp config/namespaced-install/cluster-role.yaml "$chart/files/config/namespaced-install/"
cp config/namespaced-install/served-namespace/role.yaml "$chart/files/config/namespaced-install/served-namespace/"
cp config/flowcontrol/flowcontrol.yaml "$chart/files/config/flowcontrol/"
cp config/policy/*-spec.yaml "$chart/files/config/policy/"
cp config/prometheus/monitor.yaml config/prometheus/rules.yaml "$chart/files/config/prometheus/"
