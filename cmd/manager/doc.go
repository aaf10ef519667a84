// Command manager is the exagent operator: the AgentRun and
// ApprovalDecision controllers, the bounded IO executor and the admission
// webhooks, with flags for the kubeconfig, leader election, metrics, health
// probes, the webhook server and concurrency.
package main
