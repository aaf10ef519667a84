// Package model owns the model providers: Scripted (replays an Agent's
// script, one turn per request) and OpenAI (any OpenAI-compatible
// chat-completions endpoint through the official SDK). A provider turns one
// loop.ModelRequest into one loop.ModelResponse; it has no side effect, so a
// request whose answer was lost is simply sent again by the engine (a
// bounded number of times per step). Transient failures (429, 5xx,
// timeouts, broken connections) are retried by the official SDK with
// backoff and the server's Retry-After, bounded by RetryOptions and always
// inside the model timeout; 400/401/403/404/422 never are. An answer is
// read up to MaxAnswerBytes, a redirect is never followed, and a request
// the egress policy refuses or the endpoint redirects is not retried.
package model
