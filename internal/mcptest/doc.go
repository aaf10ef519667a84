// Package mcptest runs a real MCP server, built with the official SDK's own
// server package, on 127.0.0.1 for the tests of the mcp tool kind: it
// records what each tools/call carried (idempotency key in header and
// _meta, credentials) and lets a test change a tool's schema, remove a
// tool, make calls hang, or take the whole server down and back. Hang is
// the hostile server: it accepts connections and never answers.
package mcptest
