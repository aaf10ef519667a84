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

// Package ui is `kubectl approve ui`: the approver's page, an inbox of the
// approvals waiting for a human, a page per run and a thread per
// conversation (conversation.go), served by the plugin
// (docs/ui.md, docs/architecture.md §17).
//
// The page has no authority of its own. Every request it makes to the
// apiserver carries the person's own credentials — the kubeconfig the CLI
// verbs use, or, in server mode, the bearer token of the HTTP request
// being answered — so admission stamps the person as a decision's actor,
// and RBAC and policy.approvers apply unchanged. It never falls back to
// any other identity.
//
// What it refuses, and why:
//   - a listen address other than loopback without --address, and a
//     non-loopback one without TLS (a decision page in clear text on a
//     network is a stolen session);
//   - in local mode, any request without the per-start token or the
//     session cookie it is exchanged for (another local user, or a page
//     in the browser, must not act as you), the token a second time and
//     a session past its lifetime (a leaked URL or a forgotten tab does
//     not decide forever), and a Host header that is not the address it
//     listens on (DNS rebinding);
//   - in server mode, a request without a bearer token (401: it never
//     uses its own credentials), and --auth kubeconfig (one person's
//     credentials for a whole team);
//   - a POST whose Origin is not the page's own, whose Sec-Fetch-Site is
//     not same-origin, or without the session's CSRF token (another site,
//     or another port of 127.0.0.1, must not decide for you);
//   - an Approve or Deny without a reason, a Resolve without an outcome;
//   - a decision form whose run UID, revision or payload hash — what the
//     page rendered — is not the run's any more (409, "the call changed
//     since you looked: reload"; nothing created): a click binds the call
//     the person saw, never one that replaced it.
//   - a reply on a conversation's thread whose form does not carry the
//     conversation's UID, or whose conversation was deleted and created
//     again since (409; nothing created): a reply continues the history
//     the person read. The reply is the AgentRun `kubectl approve say`
//     creates (package turn), created with the person's credentials, so
//     admission stamps them as its requester and its refusals
//     (followUps, doubleText, maxTurns, an ended conversation) are shown
//     in its words.
//
// Run content (model output, tool arguments and results) is untrusted
// text: html/template escapes it, the Content-Security-Policy forbids
// inline script and style and anything not served by the page itself,
// every asset is embedded, and responses with run content are never
// cached.
package ui
