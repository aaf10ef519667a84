package tools

import (
	"context"
	"errors"
	"fmt"
	"net"
	"unicode/utf8"

	"github.com/exagent-io/exagent/loop"
)

// Call is one invocation with what a tool needs to know about its run.
type Call struct {
	loop.ToolInvocation
	RunNamespace string
	RunName      string
	RunUID       string
	// ServiceAccount the builtin tools impersonate.
	ServiceAccount string
}

// Tool executes one call. Contract: Invoke never panics on user input and
// classifies every outcome — ResultSucceeded when the effect happened,
// ResultFailed when it certainly did not (or the tool refused), and
// ResultUnknown when it may have happened.
type Tool interface {
	Invoke(ctx context.Context, call Call) loop.ToolResult
}

// Result limits keep the run's status small (DESIGN.md §8: size is speed).
const (
	MaxResultBytes  = 16 << 10
	MaxExcerptBytes = 1 << 10
)

func succeeded(call Call, out string) loop.ToolResult {
	return loop.ToolResult{CallID: call.CallID, Kind: loop.ResultSucceeded, Output: truncate(out, MaxResultBytes)}
}

func failed(call Call, format string, a ...any) loop.ToolResult {
	return loop.ToolResult{CallID: call.CallID, Kind: loop.ResultFailed, Output: truncate(fmt.Sprintf(format, a...), MaxResultBytes)}
}

func unknown(call Call, format string, a ...any) loop.ToolResult {
	return loop.ToolResult{CallID: call.CallID, Kind: loop.ResultUnknown, Output: truncate(fmt.Sprintf(format, a...), MaxExcerptBytes)}
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…[truncated]"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// notSent reports whether err proves the request never left this process:
// the connection could not be made (refused, DNS, no route). Anything else
// after a request began may have reached the server.
func notSent(err error) bool {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	return false
}
