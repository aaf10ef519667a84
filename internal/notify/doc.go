// Package notify tells people what an AgentRun needs from them: the texts
// of Events and notifications (tool, arguments excerpt, the exact kubectl
// approve commands), the notification journal kept in the run's status
// (which event is due for which sink, delivered or not), the payloads
// (CloudEvents 1.0 structured JSON or a Slack incoming-webhook message),
// Standard Webhooks signatures, and the bounded delivery worker with its
// retries. What is due is decided from committed status alone, so a crash
// re-sends and never forgets (docs/architecture.md §12).
package notify
