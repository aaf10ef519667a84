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

package loop

import (
	"errors"
	"fmt"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
)

// ErrorKind classifies why a transition refused. Callers switch on it:
//
//   - KindConflict, KindNotPending, KindExpired, KindForbidden: a decision or
//     command does not apply to the stored state; reject it, change nothing.
//   - KindStaleFence: this process no longer owns the run; stop, do no IO.
//   - KindUncertain: an effect has no confirmed outcome; a human must Resolve.
//   - KindInvalidContinuation, KindTooLarge, KindLimitExceeded: the run cannot
//     go on; end it with Fail(s, err.Reason, err.Message, now) (see IsPermanent).
type ErrorKind string

const (
	KindConflict            ErrorKind = "Conflict"
	KindExpired             ErrorKind = "Expired"
	KindStaleFence          ErrorKind = "StaleFence"
	KindNotPending          ErrorKind = "NotPending"
	KindUncertain           ErrorKind = "Uncertain"
	KindInvalidContinuation ErrorKind = "InvalidContinuation"
	KindLimitExceeded       ErrorKind = "LimitExceeded"
	KindTooLarge            ErrorKind = "TooLarge"
	KindForbidden           ErrorKind = "Forbidden"
)

// Error is the engine's typed error. Reason is PascalCase and fit for a
// condition or status.reason; Message is for a person.
type Error struct {
	Kind    ErrorKind
	Reason  string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Kind)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// Is makes errors.Is(err, ErrConflict) (and the other sentinels) match any
// *Error of the same kind, whatever its reason and message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind
}

// Sentinels for errors.Is.
var (
	ErrConflict            = &Error{Kind: KindConflict}
	ErrExpired             = &Error{Kind: KindExpired}
	ErrStaleFence          = &Error{Kind: KindStaleFence}
	ErrNotPending          = &Error{Kind: KindNotPending}
	ErrUncertain           = &Error{Kind: KindUncertain}
	ErrInvalidContinuation = &Error{Kind: KindInvalidContinuation}
	ErrLimitExceeded       = &Error{Kind: KindLimitExceeded}
	ErrTooLarge            = &Error{Kind: KindTooLarge}
	ErrForbidden           = &Error{Kind: KindForbidden}
)

// IsKind reports whether err (or anything it wraps) is an *Error of kind k.
func IsKind(err error, k ErrorKind) bool {
	e, ok := AsError(err)
	return ok && e.Kind == k
}

// IsPermanent reports whether err means the run cannot go on and the caller
// should end it with Fail(s, e.Reason, e.Message, now).
func IsPermanent(err error) bool {
	return IsKind(err, KindInvalidContinuation) || IsKind(err, KindTooLarge) || IsKind(err, KindLimitExceeded)
}

// AsError returns err as *Error when it is one. A chain that does not
// hold (*segment.CorruptError, from the segment format the engine shares
// with its readers) is one too: KindInvalidContinuation, reason
// TranscriptCorrupt, its message as it is — so IsKind and IsPermanent
// see it, and the caller ends the run with Fail(s, e.Reason, e.Message, now).
// (errors.Is against the sentinels does not: match chain errors by kind.)
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	if c, ok := segment.AsCorrupt(err); ok {
		return &Error{Kind: KindInvalidContinuation, Reason: exagentv1.ReasonTranscriptCorrupt, Message: c.Message}, true
	}
	return nil, false
}

func errorf(kind ErrorKind, reason, format string, args ...any) *Error {
	return &Error{Kind: kind, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func conflictf(format string, args ...any) *Error {
	return errorf(KindConflict, exagentv1.ReasonConflict, format, args...)
}

func notPendingf(format string, args ...any) *Error {
	return errorf(KindNotPending, exagentv1.ReasonNotPending, format, args...)
}

func invalidf(format string, args ...any) *Error {
	return errorf(KindInvalidContinuation, exagentv1.ReasonInvalidContinuation, format, args...)
}

func staleFencef(format string, args ...any) *Error {
	return errorf(KindStaleFence, exagentv1.ReasonStaleFence, format, args...)
}
