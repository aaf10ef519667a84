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

package segment

import (
	"errors"
	"fmt"
)

// hint tells the person reading a CorruptError what to do.
const hint = "; the run's sealed transcript cannot be proven, so no IO is made with it: " +
	"restore the segment from a backup (its name is its content hash) or create a new run"

// CorruptError is a chain that does not hold: a segment missing, edited,
// of another run or out of place, or a sealed value not where its ref
// says. Its text is for a person — it names the segment, why, and what to
// do — and carries no error kind. The engine ends a run on it with reason
// TranscriptCorrupt (loop.AsError maps it).
type CorruptError struct {
	Message string
}

func (e *CorruptError) Error() string { return e.Message }

// Corruptf is the CorruptError of a chain that does not hold, for format
// and args; callers use it for a segment their store does not have.
func Corruptf(format string, args ...any) error {
	return &CorruptError{Message: fmt.Sprintf(format, args...) + hint}
}

// AsCorrupt returns err as a *CorruptError when it is (or wraps) one.
func AsCorrupt(err error) (*CorruptError, bool) {
	var e *CorruptError
	ok := errors.As(err, &e)
	return e, ok
}
