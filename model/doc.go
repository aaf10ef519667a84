// Package model owns the model providers: Scripted (replays an Agent's
// script, one turn per request) and OpenAI (any OpenAI-compatible
// chat-completions endpoint through the official SDK). A provider turns one
// loop.ModelRequest into one loop.ModelResponse; it has no side effect, so a
// request whose answer was lost is simply sent again by the engine.
package model
