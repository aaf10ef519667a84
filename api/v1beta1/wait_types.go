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

// Waits on the world (DESIGN §20): what a WaitFor call waits on, and the
// callbacks of NewCallback. Both are journaled in the run's status and
// are all the manager needs to wake the run after a restart.

// WaitedObject is what a WaitFor call waits on, journaled when the wait
// began: the object (or the objects a label selector names), read as the
// run's ServiceAccount, and the condition.
type WaitedObject struct {
	// apiVersion of the object (apps/v1, v1).
	// +required
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// kind of the object (Deployment).
	// +required
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// namespace of the object; the run's namespace when the call named none.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// name of the object; or labelSelector.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// labelSelector selects the objects waited on (every one must meet the
	// condition, and at least one must exist); or name.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	LabelSelector string `json:"labelSelector,omitempty"`
	// condition is what ends the wait: Type=Status (Available=True),
	// Current (kstatus), or a CEL expression over the object (self).
	// +required
	// +kubebuilder:validation:MaxLength=4096
	Condition string `json:"condition"`
	// serviceAccount the object is read as (the run's).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccount string `json:"serviceAccount,omitempty"`
}

// RunCallback is a callback URL a NewCallback call made, and the first
// valid POST it received.
type RunCallback struct {
	// id of the callback, the one WaitForCallback names.
	// +required
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`
	// callID is the NewCallback call that made it.
	// +required
	// +kubebuilder:validation:MaxLength=64
	CallID string `json:"callID"`
	// createdAt is when it was made.
	// +required
	CreatedAt metav1.MicroTime `json:"createdAt"`
	// expiresAt is when its URL stops being accepted.
	// +required
	ExpiresAt metav1.MicroTime `json:"expiresAt"`
	// receivedAt is when its first valid POST arrived.
	// +optional
	ReceivedAt *metav1.MicroTime `json:"receivedAt,omitempty"`
	// body of that POST (bounded).
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Body string `json:"body,omitempty"`
	// consumedBy is the WaitForCallback call that received the body.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ConsumedBy string `json:"consumedBy,omitempty"`
}

// Target says what a wait waits for, in messages, results and the page:
// "Deployment team-a/web to be Available=True", "ConfigMap in team-a with
// labels app=x to be Current", "callback cb-…", or "a timer".
func (w *CallWait) Target() string {
	switch w.Kind {
	case WaitObject:
		return w.Object.Target()
	case WaitCallback:
		return "callback " + w.Callback
	}
	return "a timer"
}

// Target says what a WaitFor call waits on ("an object" when unknown).
func (o *WaitedObject) Target() string {
	if o == nil {
		return "an object"
	}
	what := o.Kind + " " + o.Namespace + "/" + o.Name
	if o.Name == "" {
		what = o.Kind + " in " + o.Namespace + " with labels " + o.LabelSelector
	}
	return what + " to be " + o.Condition
}
