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

package v1beta1

// The formats of a run's status journal (status.formatVersion). A release
// reads every format an earlier release wrote and writes only
// JournalFormat; a run of a format above it is left untouched
// (ReasonUnknownFormat). docs/upgrading.md lists what each format holds.
const (
	// JournalFormatUnversioned is the journal v0.3.0 and every release
	// before status.formatVersion wrote: the field is absent.
	JournalFormatUnversioned int32 = 1
	// JournalFormat is the format this release writes: format 1's journal
	// with status.formatVersion set. A later release that changes what a
	// field of the journal means raises it and reads 1 and 2 as before.
	JournalFormat int32 = 2
)

// ReasonUnknownFormat is the Ready condition's reason on a run whose
// journal a newer release wrote (status.formatVersion above
// JournalFormat): the manager neither drives nor rewrites it.
const ReasonUnknownFormat = "UnknownFormat"

// Format is the journal's format: status.formatVersion, or
// JournalFormatUnversioned when it is absent.
func (s *AgentRunStatus) Format() int32 {
	if s.FormatVersion == 0 {
		return JournalFormatUnversioned
	}
	return s.FormatVersion
}

// KnownFormat reports whether this release can read the journal.
func (s *AgentRunStatus) KnownFormat() bool { return s.Format() <= JournalFormat }
