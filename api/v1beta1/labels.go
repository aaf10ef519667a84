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

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Labels the manager sets. Their values are run names when a name fits a
// label value, otherwise LabelValue's shortened form; the objects' specs
// (spec.delegation, spec.runRef) hold the exact names and UIDs.
const (
	// LabelRun is set on an AgentRunSegment to its run's name.
	LabelRun = "exagent.io/run"
	// LabelRunUID is set on an AgentRunSegment to its run's UID.
	LabelRunUID = "exagent.io/run-uid"
	// LabelParentRun is set on a child run to its parent's name (docs/architecture.md §5).
	LabelParentRun = "exagent.io/parent-run"
	// LabelRootRun is set on a child run to its tree's root run's name.
	LabelRootRun = "exagent.io/root-run"
)

// Annotations the admission webhook sets (and overwrites whatever a
// client sent under these keys). The two signature annotations keep the
// names they were first stored under ("-seal"): decisions and runs admitted
// by an older manager still verify. In the code "seal" means only the
// transcript's move into segments.
const (
	// AnnotationActorSignature carries the webhook's signature of a decision's
	// actor (authz.Signer).
	AnnotationActorSignature = "exagent.io/actor-seal"
	// AnnotationBoundRunUID records, on an admitted decision, the UID of
	// the run it was admitted for. The signature covers that UID; the
	// annotation only lets a refusal say which run it was. (Before
	// v0.1.0 it was exagent.io/run-uid, the segments' label key.)
	AnnotationBoundRunUID = "exagent.io/bound-run-uid"
	// AnnotationRequesterSignature carries the webhook's signature of a run's
	// spec.requestedBy (authz.Signer.SignRequester).
	AnnotationRequesterSignature = "exagent.io/requester-seal"
	// AnnotationAdmittedBy is stamped on every AgentRun the webhook admits:
	// the username of the manager whose webhook admitted it. A
	// namespace-scoped install's webhooks are called only in the namespaces
	// it serves, so a run without it (and without a status) was created
	// where no exagent manager serves: nothing will run it, and kubectl
	// approve says so.
	AnnotationAdmittedBy = "exagent.io/admitted-by"
	// AnnotationTurnCreated is set by admission on a turn of a
	// conversation to the instant it was admitted (RFC 3339, nanoseconds):
	// turns are ordered by it (creationTimestamp has only seconds, and two
	// turns said in one second must keep the order they were said in).
	AnnotationTurnCreated = "exagent.io/turn-created"
)

// maxLabelValue is the longest label value Kubernetes accepts.
const maxLabelValue = 63

// labelHashLen is how many hex digits of a name's SHA-256 a shortened
// label value ends with.
const labelHashLen = 10

// LabelValue is name as a label value: name itself when it fits (63
// characters), otherwise its first 52 characters (without trailing
// separators, so it still ends alphanumeric), "-" and 10 hex digits of its
// SHA-256 — distinct names stay distinct, and the value is stable.
func LabelValue(name string) string {
	if len(name) <= maxLabelValue {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	head := name[:maxLabelValue-labelHashLen-1]
	return strings.TrimRight(head, "-.") + "-" + hex.EncodeToString(sum[:])[:labelHashLen]
}

// LabelConversation is set by admission on a turn (a run with
// spec.conversationRef) to its Conversation's name: a conversation's turns
// are listed by it.
const LabelConversation = "exagent.io/conversation"

// LabelShard names the shard of managers that serves an object
// (docs/architecture.md §22, docs/install.md "Scaling out"). Admission
// stamps it on every AgentRun created where shards are configured, and
// on every ApprovalDecision (its run's); the manager sets it on the
// segments and child runs it creates (their run's). A manager started
// with --shard NAME caches and works only the runs, decisions and
// segments labelled NAME. On a Namespace it pins every run created there
// to that shard.
const LabelShard = "exagent.io/shard"
