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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxSegmentBytes bounds the encoded content of one AgentRunSegment
// (docs/architecture.md §10): far below etcd's object limit, and small enough to read
// on demand.
const MaxSegmentBytes = 256 << 10

// MaxValueBytes bounds one value the engine stores (a message's content,
// a call's arguments or result, the final answer): the CRD's maxLength of
// those fields, counted in bytes.
const MaxValueBytes = 65536

// MaxSegmentValueLength bounds the data of one sealed value: the base64
// form of a value of MaxValueBytes (4 characters per 3 bytes). A value
// whose JSON escaping would cost more than that is stored base64, so the
// worst value (control characters, 6 bytes each once escaped) still takes
// at most this much, and two of them fit one segment.
const MaxSegmentValueLength = 4 * ((MaxValueBytes + 2) / 3)

// AgentRunSegmentSpec is one immutable, content-addressed piece of a run's
// sealed transcript. Its name is the sha256 of its canonical content, and
// it records the hash of the segment before it: the run's
// status.transcript.head names the last one, so a missing, reordered or
// edited segment breaks the chain and is found before any IO.
//
// Atomic for server-side apply (written once, whole, by the manager): no
// per-field ownership to compute for its many fields at creation.
// +structType=atomic
type AgentRunSegmentSpec struct {
	// runName is the run the segment belongs to.
	// +required
	// +kubebuilder:validation:MaxLength=253
	RunName string `json:"runName"`
	// runUID is the UID of that run: a re-created run of the same name
	// never reads the old run's segments.
	// +required
	// +kubebuilder:validation:MaxLength=64
	RunUID string `json:"runUID"`
	// index is the segment's position in the chain, from 0.
	// +required
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`
	// previous is the name (hash) of the segment before; empty for index 0.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Previous string `json:"previous,omitempty"`
	// firstMessage is the logical transcript number of messages[0].
	// +optional
	// +kubebuilder:validation:Minimum=0
	FirstMessage int64 `json:"firstMessage,omitempty"`
	// bytes is the transcript content the segment holds.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// messages sealed from the hot status, in transcript order.
	// +optional
	// +kubebuilder:validation:MaxItems=512
	// +listType=atomic
	Messages []Message `json:"messages,omitempty"`
	// calls are journal entries of past steps, in journal order.
	// +optional
	// +kubebuilder:validation:MaxItems=512
	// +listType=atomic
	Calls []ToolCall `json:"calls,omitempty"`
	// approvals of past steps, in request order.
	// +optional
	// +kubebuilder:validation:MaxItems=512
	// +listType=atomic
	Approvals []Approval `json:"approvals,omitempty"`
	// receipts of decisions applied at past revisions, in the order they
	// were applied: a repeated decision finds its receipt here.
	// +optional
	// +kubebuilder:validation:MaxItems=512
	// +listType=atomic
	Receipts []Receipt `json:"receipts,omitempty"`
	// values too large for the hot status (a message's content, a call's
	// args or result), referenced by their sha256.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Values []SegmentValue `json:"values,omitempty"`
}

// ValueEncoding is how a sealed value's data is written.
// +kubebuilder:validation:Enum=Base64
type ValueEncoding string

// ValueBase64: data is the standard base64 (RFC 4648, padded) of the value.
const ValueBase64 ValueEncoding = "Base64"

// SegmentValue is one sealed value.
type SegmentValue struct {
	// sha256 of the value (of the decoded bytes when encoding is set).
	// +required
	// +kubebuilder:validation:MaxLength=64
	SHA256 string `json:"sha256"`
	// encoding of data: empty for the value itself, Base64 for a value
	// whose JSON escaping would take more room than its base64 form
	// (control characters take 6 bytes each once escaped).
	// +optional
	Encoding ValueEncoding `json:"encoding,omitempty"`
	// data is the value, written as encoding says.
	// +required
	// +kubebuilder:validation:MaxLength=87384
	Data string `json:"data"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ars,categories=exagent
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="RUN",type=string,JSONPath=`.spec.runName`
// +kubebuilder:printcolumn:name="INDEX",type=integer,JSONPath=`.spec.index`
// +kubebuilder:printcolumn:name="BYTES",type=integer,JSONPath=`.spec.bytes`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// AgentRunSegment is an immutable piece of a run's sealed transcript,
// owned by the run (deleted with it) and created only by the manager.
type AgentRunSegment struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the segment's object metadata; its name is its content's hash.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the segment's content. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a segment is immutable: its name is the hash of its content"
	Spec AgentRunSegmentSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// AgentRunSegmentList is a list of AgentRunSegments.
type AgentRunSegmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AgentRunSegment `json:"items"`
}
