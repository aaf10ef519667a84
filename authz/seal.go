package authz

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"

	"fmt"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// SealAnnotation carries the admission webhook's seal of a decision.
const SealAnnotation = "exagent.io/actor-seal"

const (
	sealVersion = "v1."
	minKeyBytes = 32
)

// Seal proves that a decision went through the exagent admission webhook.
//
// The controller's re-check (VerifyDecision) asks RBAC about the decision's
// spec.actor. If the webhook were bypassed (its configuration deleted or
// misconfigured), spec.actor would be whatever the client wrote, and a
// client naming a real approver would pass that re-check. With a Seal, the
// mutating webhook signs (HMAC-SHA256, a key only the manager holds) the
// decision's namespace and spec — actor and operationID included — into
// SealAnnotation, and VerifyDecision rejects a decision whose seal is
// missing or does not match: a forged or unstamped actor cannot be applied.
type Seal struct {
	key []byte
}

// NewSeal returns a Seal with key, which must be at least 32 bytes.
func NewSeal(key []byte) (*Seal, error) {
	if len(key) < minKeyBytes {
		return nil, fmt.Errorf("seal key: %d bytes, want at least %d", len(key), minKeyBytes)
	}
	return &Seal{key: append([]byte(nil), key...)}, nil
}

// sealed is what the seal covers. A decision is immutable, so its
// namespace and spec never change after admission. The name is left out on
// purpose: with metadata.generateName the apiserver picks the name after
// admission, so the webhook cannot know it. A sealed spec copied under
// another name is the same decision — same actor, same operationID — and
// the engine's idempotency turns it into the stored receipt, never a second
// effect.
type sealed struct {
	Namespace string                         `json:"namespace"`
	Spec      exagentv1.ApprovalDecisionSpec `json:"spec"`
}

// Sign returns the seal of d as it is now.
func (s *Seal) Sign(d *exagentv1.ApprovalDecision) (string, error) {
	// encoding/json writes struct fields in declaration order and sorts
	// map keys, so the bytes are a function of the values.
	data, err := json.Marshal(sealed{Namespace: d.Namespace, Spec: d.Spec})
	if err != nil {
		return "", fmt.Errorf("sealing decision %s/%s: %w", d.Namespace, d.Name, err)
	}
	mac := hmac.New(sha256.New, s.key)
	mac.Write(data)
	return sealVersion + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Stamp writes d's seal into its annotations.
func (s *Seal) Stamp(d *exagentv1.ApprovalDecision) error {
	v, err := s.Sign(d)
	if err != nil {
		return err
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[SealAnnotation] = v
	return nil
}

// Verify returns a *DeniedError (CheckActor) unless d carries its own seal.
func (s *Seal) Verify(d *exagentv1.ApprovalDecision) error {
	got, ok := d.Annotations[SealAnnotation]
	if !ok {
		return denied(CheckActor, fmt.Sprintf(
			"the decision has no %s annotation: it was not admitted by the exagent admission webhook", SealAnnotation))
	}
	want, err := s.Sign(d)
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(got), []byte(want)) {
		return denied(CheckActor, fmt.Sprintf(
			"the decision's %s annotation does not match its spec: it was altered or not admitted by the exagent admission webhook", SealAnnotation))
	}
	return nil
}
