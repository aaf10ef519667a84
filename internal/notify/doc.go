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

// Package notify tells people what an AgentRun needs from them: the texts
// of Events and notifications (tool, arguments excerpt, the exact kubectl
// approve commands), the notification journal kept in the run's status
// (which event is due for which sink, delivered or not), the payloads
// (CloudEvents 1.0 structured JSON or a Slack incoming-webhook message),
// Standard Webhooks signatures, and their delivery: the Deliverer, a
// leader-only manager runnable with its own queue, bounded workers
// (internal/pool), HTTP client and retries. What is due is decided from
// committed status alone, so a crash re-sends and never forgets
// (docs/architecture.md §12).
//
// Files: journal.go is the journaling rule every status commit applies
// (Journal) and the delivery schedule (Due, Retry); deliverer.go the
// runnable, its informer handler and queue; process.go one run's due
// deliveries; settle.go an attempt's result, the
// exagent_notification_deliveries_total metric and the NotificationFailed
// Events; write.go the compare-and-swap journal of the results through
// StatusWriter (the controllers' Store, behind an interface: nothing here
// imports the controllers); send.go, payload.go, describe.go the request,
// its body and its texts.
package notify
