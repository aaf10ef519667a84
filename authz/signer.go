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

package authz

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// The annotations the signatures are written to and read from (api/v1alpha1/labels.go).
const (
	SignatureAnnotation          = exagentv1.AnnotationActorSignature
	RunUIDAnnotation             = exagentv1.AnnotationBoundRunUID
	RequesterSignatureAnnotation = exagentv1.AnnotationRequesterSignature
)

const (
	// signatureVersion prefixes every signature. v2 signatures cover the run's UID
	// (decisions) and say what they sign; a v1 signature (an older manager's)
	// does not verify.
	signatureVersion = "v2."
	minKeyBytes      = 32
	purposeActor     = "ApprovalDecision.spec"
	purposeRunner    = "AgentRun.spec.requestedBy"
)

// Signer proves that an object went through the exagent admission webhook.
//
// The controller's re-check (VerifyDecision) asks RBAC about the decision's
// spec.actor and applies forbidSelfApproval against the run's
// spec.requestedBy. If the webhook were bypassed (its configuration deleted
// or misconfigured), both would be whatever the client wrote: a client
// naming a real approver as actor, or someone else as requester, would pass
// that re-check. With a Signer, the mutating webhook signs (HMAC-SHA256, a key
// only the manager holds) what it stamped:
//
//   - a decision's namespace, spec (actor and operationID included) and the
//     UID of the run it names, into SignatureAnnotation: a forged or unstamped
//     actor cannot be applied, nor a sealed decision replayed onto a run
//     re-created under the same name;
//   - a run's namespace, name (or generateName) and spec (requestedBy
//     included), into RequesterSignatureAnnotation: a requester nobody stamped is
//     unknown, and forbidSelfApproval fails closed on it.
type Signer struct {
	key []byte
}

// NewSigner returns a Signer with key, which must be at least 32 bytes.
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < minKeyBytes {
		return nil, fmt.Errorf("signing key: %d bytes, want at least %d", len(key), minKeyBytes)
	}
	return &Signer{key: append([]byte(nil), key...)}, nil
}

// signedDecision is what a decision's signature covers. A decision is immutable,
// so its namespace and spec never change after admission; the run's UID is
// the run that existed when it was admitted. The decision's name is left
// out on purpose: with metadata.generateName the apiserver picks the name
// after admission, so the webhook cannot know it. A sealed spec copied under
// another name is the same decision — same actor, same operationID, same
// run — and the engine's idempotency turns it into the stored receipt,
// never a second effect.
type signedDecision struct {
	Purpose   string                         `json:"purpose"`
	Namespace string                         `json:"namespace"`
	RunUID    types.UID                      `json:"runUID"`
	Spec      exagentv1.ApprovalDecisionSpec `json:"spec"`
}

// signedRequester is what a run's requester signature covers: the whole spec
// (immutable after creation, requestedBy included) in its namespace under
// its name — or, for a run created with metadata.generateName (named after
// admission), its generateName. A copied signature therefore only verifies on a
// run that asks for exactly what the sealed requester asked for, under the
// same name.
type signedRequester struct {
	Purpose      string                 `json:"purpose"`
	Namespace    string                 `json:"namespace"`
	Name         string                 `json:"name,omitempty"`
	GenerateName string                 `json:"generateName,omitempty"`
	Spec         exagentv1.AgentRunSpec `json:"spec"`
}

func (s *Signer) mac(v any) (string, error) {
	// encoding/json writes struct fields in declaration order and sorts
	// map keys, so the bytes are a function of the values.
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, s.key)
	m.Write(data)
	return signatureVersion + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// Signature returns the signature of d, admitted for the run whose UID is runUID.
func (s *Signer) Signature(d *exagentv1.ApprovalDecision, runUID types.UID) (string, error) {
	v, err := s.mac(signedDecision{Purpose: purposeActor, Namespace: d.Namespace, RunUID: runUID, Spec: d.Spec})
	if err != nil {
		return "", fmt.Errorf("signing decision %s/%s: %w", d.Namespace, d.Name, err)
	}
	return v, nil
}

// Sign writes d's signature, for the run whose UID is runUID, into its
// annotations (and the UID, for the refusal's message).
func (s *Signer) Sign(d *exagentv1.ApprovalDecision, runUID types.UID) error {
	v, err := s.Signature(d, runUID)
	if err != nil {
		return err
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[SignatureAnnotation] = v
	d.Annotations[RunUIDAnnotation] = string(runUID)
	return nil
}

// Verify returns a *DeniedError (CheckActor) unless d carries its own signature
// for run (the run as it is now: its UID must be the one d was admitted for).
func (s *Signer) Verify(d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun) error {
	got, ok := d.Annotations[SignatureAnnotation]
	if !ok {
		return denied(CheckActor, fmt.Sprintf(
			"the decision has no %s annotation: it was not admitted by the exagent admission webhook", SignatureAnnotation))
	}
	want, err := s.Signature(d, run.UID)
	if err != nil {
		return err
	}
	if hmac.Equal([]byte(got), []byte(want)) {
		return nil
	}
	if uid := d.Annotations[RunUIDAnnotation]; uid != "" && types.UID(uid) != run.UID {
		return denied(CheckActor, fmt.Sprintf(
			"the decision was admitted for an earlier run named %q (uid %s), not this one (uid %s): "+
				"a decision never carries over to a re-created run; look at this run and decide again", run.Name, uid, run.UID))
	}
	if !strings.HasPrefix(got, signatureVersion) {
		return denied(CheckActor, fmt.Sprintf(
			"the decision's %s annotation was made by an older exagent manager: create the decision again", SignatureAnnotation))
	}
	return denied(CheckActor, fmt.Sprintf(
		"the decision's %s annotation does not match its spec: it was altered or not admitted by the exagent admission webhook", SignatureAnnotation))
}

func requesterSigned(run *exagentv1.AgentRun, byGenerateName bool) signedRequester {
	v := signedRequester{Purpose: purposeRunner, Namespace: run.Namespace, Name: run.Name, Spec: run.Spec}
	if byGenerateName {
		v.Name, v.GenerateName = "", run.GenerateName
	}
	return v
}

// SignRequester writes the signature of run's spec.requestedBy into its
// annotations. It runs at admission, where a run created with
// metadata.generateName has no name yet: the signature then covers the
// generateName.
func (s *Signer) SignRequester(run *exagentv1.AgentRun) error {
	v, err := s.mac(requesterSigned(run, run.Name == ""))
	if err != nil {
		return fmt.Errorf("signing the requester of run %s/%s: %w", run.Namespace, run.Name, err)
	}
	if run.Annotations == nil {
		run.Annotations = map[string]string{}
	}
	run.Annotations[RequesterSignatureAnnotation] = v
	return nil
}

// VerifyRequester returns nil when run's spec.requestedBy carries the
// admission webhook's signature, and otherwise an error that says why the
// requester is unknown.
func (s *Signer) VerifyRequester(run *exagentv1.AgentRun) error {
	got, ok := run.Annotations[RequesterSignatureAnnotation]
	if !ok {
		return fmt.Errorf("the run has no %s annotation: it was created past the exagent admission webhook, "+
			"or before decisions were signed", RequesterSignatureAnnotation)
	}
	tries := []bool{false}
	if run.GenerateName != "" {
		tries = append(tries, true)
	}
	for _, byGenerateName := range tries {
		want, err := s.mac(requesterSigned(run, byGenerateName))
		if err != nil {
			return fmt.Errorf("signing the requester of run %s/%s: %w", run.Namespace, run.Name, err)
		}
		if hmac.Equal([]byte(got), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("the run's %s annotation does not match its spec: spec.requestedBy was not stamped "+
		"by the exagent admission webhook for this run", RequesterSignatureAnnotation)
}
