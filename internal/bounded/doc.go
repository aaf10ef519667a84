// Package bounded reads what another party sends with a limit: a response
// body wrapped here errors past its bound instead of growing the manager's
// heap with whatever a model endpoint, a tool or an MCP server chose to
// stream (a 3 GiB model answer once took a manager to 23 GiB of memory).
//
// The error past the bound is a *TooLargeError, distinguishable from a
// broken connection, so each caller can say what happened: a model answer
// over its bound fails the run's request clearly; a tool answer over its
// bound after the request was sent leaves the effect's fate unknown. At the
// bound the underlying body is closed at once, so the connection is torn
// down and the sender stops instead of being drained.
package bounded
