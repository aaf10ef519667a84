// Package health tests what tools that know nothing of exagent's phases
// make of its objects: kstatus (sigs.k8s.io/cli-utils), the Argo CD health
// checks of config/argocd (run with gopher-lua, as Argo CD does) and the
// Flux healthCheckExprs of config/flux (run with cel-go, as Flux does),
// against sample runs of every phase whose conditions come from the
// engine's own loop.Conditions, sample Agents of every state of their
// check whose conditions come from the Agent controller's own
// controllers.AgentConditions, and applied and rejected decisions.
package health
