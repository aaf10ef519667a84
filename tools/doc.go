// Package tools owns the tool implementations a run's model may call: http
// (POST with an Idempotency-Key, clean failure vs unknown outcome) and
// builtin (cluster operations executed by impersonating the run's
// ServiceAccount). Every Invoke returns a loop.ToolResult and never an error:
// a tool's failure is something the model sees, and an outcome the tool
// cannot know is ResultUnknown, which the engine turns into Uncertain.
package tools
