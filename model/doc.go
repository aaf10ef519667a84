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

// Package model owns the model providers: Scripted (replays an Agent's
// script, one turn per request), OpenAI (any OpenAI-compatible
// chat-completions endpoint through the official SDK) and Anthropic (the
// Messages API through the official SDK, with prompt caching), the
// endpoint settings they share (headers, CA bundle: endpoint.go) and the
// waiting out of rate limits (ratelimit.go, limiter.go). A provider turns one
// loop.ModelRequest into one loop.ModelResponse; it has no side effect, so a
// request whose answer was lost is simply sent again by the engine (a
// bounded number of times per step). Transient failures (429, 5xx,
// timeouts, broken connections) are retried by the official SDK with
// backoff and the server's Retry-After, bounded by RetryOptions and always
// inside the model timeout; 400/401/403/404/422 never are. An answer is
// read up to MaxAnswerBytes, a redirect is never followed, and a request
// the egress policy refuses or the endpoint redirects is not retried.
package model
