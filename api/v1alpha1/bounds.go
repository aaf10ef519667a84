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

package v1alpha1

// Bounds of the string fields the manager writes (their CRD maxLength).
// kubebuilder markers cannot name a Go constant, so each marker repeats
// the number and TestStringBoundsMatchTheCRD holds the two together: the
// code truncates what it stores to these, so a commit is never refused by
// validation after the IO it records has happened. (MaxValueBytes, for
// message contents, arguments, results and output, is beside the segments.)
const (
	// MaxMessageBytes bounds status.message (of runs and decisions), an
	// approval's reason, a resolution's evidence and a decision's reason.
	MaxMessageBytes = 4096
	// MaxIDLength bounds call ids, tool names and approval ids.
	MaxIDLength = 64
	// MaxRuleNameLength bounds a policy rule's name as journaled.
	MaxRuleNameLength = 128
	// MaxUsernameLength bounds an actor's username (and a resolver's name).
	MaxUsernameLength = 512
	// MaxChildMessageBytes bounds a child run's message mirrored in its parent.
	MaxChildMessageBytes = 1024
	// MaxMCPNameLength bounds an MCP tool's name and title as journaled.
	MaxMCPNameLength = 256
	// MaxMCPServerLength bounds an MCP server's URL as journaled.
	MaxMCPServerLength = 2048
	// MaxConditionMessageBytes bounds a condition's message (metav1.Condition's own bound).
	MaxConditionMessageBytes = 32768
	// MaxNotificationErrorBytes bounds a notification record's lastError.
	MaxNotificationErrorBytes = 512
)
