// Package health tests what tools that know nothing of exagent's phases
// make of an AgentRun: kstatus (sigs.k8s.io/cli-utils), the Argo CD health
// check config/argocd/health.lua (run with gopher-lua, as Argo CD does) and
// the Flux healthCheckExprs of config/flux (run with cel-go, as Flux does),
// against sample runs of every phase whose conditions come from the
// engine's own loop.Conditions.
package health
