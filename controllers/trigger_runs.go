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

package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/trigger"
	"github.com/exagent-io/exagent/triggers"
)

// +kubebuilder:rbac:groups=exagent.io,resources=agenttriggers,verbs=get;list;watch

// TriggerRuns is the trigger listener's view of the cluster
// (triggers.Lookup and triggers.Creator): an AgentTrigger read from the
// cache, its secret read past it (the manager caches no Secrets), its
// expressions compiled once per generation; and the runs it makes,
// named from the trigger, the dedup key and the window the event falls
// in — so a second replica, or a delivery retried after a lost answer,
// finds the run made and makes no second one.
type TriggerRuns struct {
	// Client reads AgentTriggers (cached) and creates runs.
	Client client.Client
	// APIReader reads the triggers' Secrets.
	APIReader client.Reader
	// Signer, when set, verifies the seal admission put on a trigger's
	// setter; a trigger without a valid one makes no run.
	Signer *authz.Signer
	// Clock is the handler's clock (the runs' creation times are its).
	Clock clock.PassiveClock
	// Owner says which triggers' runs this manager's cache holds: a
	// trigger's runs are on its shard, and a delivery to another shard's
	// replica counts them past the cache.
	Owner Ownership

	mu       sync.Mutex
	compiled map[types.NamespacedName]*compiledTrigger
	// recent are the runs this process created that the cache may not
	// show yet, by trigger: maxConcurrentRuns counts them too.
	recent map[types.NamespacedName]map[string]time.Time
	// secrets are the Secret values read lately (secretTTL).
	secrets map[secretKey]keptSecret
}

// compiledTrigger is one generation of a trigger, compiled.
type compiledTrigger struct {
	generation      int64
	input, dedupKey *trigger.Expr
	template        exagentv1.ScheduleRunTemplate
	uid             types.UID
	// setter is the person who last set the spec: the runs' requestedBy.
	setter exagentv1.Actor
}

var (
	_ triggers.Lookup        = &TriggerRuns{}
	_ triggers.Creator       = &TriggerRuns{}
	_ triggers.ActiveCounter = &TriggerRuns{}
	_ triggers.Refresher     = &TriggerRuns{}
)

// defaultDedupWindow is an AgentTrigger's dedupWindow when unset.
const defaultDedupWindow = 10 * time.Minute

// maxTriggerSecret bounds a trigger's secret value.
const maxTriggerSecret = 4096

// Trigger reads the trigger named key.
func (t *TriggerRuns) Trigger(ctx context.Context, key types.NamespacedName) (*triggers.Trigger, error) {
	at := &exagentv1.AgentTrigger{}
	if err := t.Client.Get(ctx, key, at); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, triggers.ErrNotFound
		}
		return nil, fmt.Errorf("reading AgentTrigger %s: %w", key, err)
	}
	src := at.Spec.Source
	if src == nil || sourcesSet(src) != 1 {
		return nil, fmt.Errorf("AgentTrigger %s names no single source", key)
	}
	out := &triggers.Trigger{NamespacedName: key, Generation: at.Generation, Suspend: at.Spec.Suspend, DedupWindow: defaultDedupWindow}
	var auth *exagentv1.TriggerAuth
	switch {
	case src.Webhook != nil:
		out.Kind, auth = triggers.Webhook, src.Webhook.Auth
		if src.Webhook.MaxBodyBytes != nil {
			out.MaxBody = int64(*src.Webhook.MaxBodyBytes)
		}
	case src.Alertmanager != nil:
		out.Kind, auth, out.Resolved = triggers.Alertmanager, src.Alertmanager.Auth, src.Alertmanager.Resolved
		out.MaxBody = 1 << 20 // a group of up to 1,000 alerts
	default:
		out.Kind = triggers.KubernetesEvents
	}
	if d := at.Spec.DedupWindow; d != nil && d.Duration > 0 {
		out.DedupWindow = d.Duration
	}
	if m := at.Spec.MaxRunsPerHour; m != nil {
		out.MaxRunsPerHour = int(*m)
	}
	if m := at.Spec.MaxConcurrentRuns; m != nil {
		out.MaxConcurrentRuns = int(*m)
	}
	// The setter and expressions first: no Secret read for a trigger
	// that could make no run anyway.
	c, err := t.compile(at)
	if err != nil {
		return nil, err
	}
	if auth != nil || out.Kind != triggers.KubernetesEvents {
		if err := t.secret(ctx, key.Namespace, auth, out); err != nil {
			return nil, err
		}
	}
	out.Input, out.DedupKey = c.input, c.dedupKey
	return out, nil
}

// sourcesSet is how many sources src names (the CRD allows exactly one).
func sourcesSet(src *exagentv1.TriggerSource) int {
	n := 0
	for _, set := range []bool{src.Webhook != nil, src.Alertmanager != nil, src.KubernetesEvents != nil} {
		if set {
			n++
		}
	}
	return n
}

// secret reads the trigger's signing secret or bearer token.
func (t *TriggerRuns) secret(ctx context.Context, ns string, auth *exagentv1.TriggerAuth, out *triggers.Trigger) error {
	if auth == nil || (auth.SigningSecretRef == nil) == (auth.BearerTokenSecretRef == nil) {
		return fmt.Errorf("AgentTrigger %s/%s names no single secret in its source's auth", ns, out.Name)
	}
	ref := auth.SigningSecretRef
	if ref == nil {
		ref = auth.BearerTokenSecretRef
	}
	ck := secretKey{namespace: ns, name: ref.Name, key: ref.Key}
	if v, ok := t.cachedSecret(ck); ok {
		t.setSecret(auth, v, out)
		return nil
	}
	s := &corev1.Secret{}
	if err := t.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, s); err != nil {
		err = fmt.Errorf("reading Secret %s/%s of AgentTrigger %s: %w", ns, ref.Name, out.Name, err)
		if apierrors.IsNotFound(err) {
			return problem(exagentv1.ReasonSecretUnavailable, err)
		}
		return err
	}
	v := s.Data[ref.Key]
	if len(v) == 0 || len(v) > maxTriggerSecret {
		return problem(exagentv1.ReasonSecretUnavailable,
			fmt.Errorf("the Secret %s/%s has no key %q of 1..%d bytes (AgentTrigger %s)", ns, ref.Name, ref.Key, maxTriggerSecret, out.Name))
	}
	t.keepSecret(ck, string(v))
	t.setSecret(auth, string(v), out)
	return nil
}

func (t *TriggerRuns) setSecret(auth *exagentv1.TriggerAuth, v string, out *triggers.Trigger) {
	if auth.SigningSecretRef != nil {
		out.SigningSecret = strings.TrimSpace(v)
	} else {
		out.BearerToken = strings.TrimSpace(v)
	}
}

// secretTTL is how long a trigger's Secret value read past the cache is
// used before it is read again: without it every delivery is an apiserver
// GET (a burst of 10,000 events was 10,000 GETs, most of the apiserver's
// CPU). A rotated value is read at once when a delivery fails to
// authenticate with the kept one (Refresh), at most every
// secretRefreshEvery.
const (
	secretTTL          = 10 * time.Second
	secretRefreshEvery = time.Second
	// maxKeptSecrets bounds the values kept (one per trigger secret).
	maxKeptSecrets = 4096
)

// secretKey names a key of a Secret.
type secretKey struct{ namespace, name, key string }

// keptSecret is a Secret's value and when it was read.
type keptSecret struct {
	value  string
	readAt time.Time
}

func (t *TriggerRuns) cachedSecret(k secretKey) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.secrets[k]
	if !ok || t.now().Sub(v.readAt) >= secretTTL {
		return "", false
	}
	return v.value, true
}

func (t *TriggerRuns) keepSecret(k secretKey, v string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.secrets == nil {
		t.secrets = map[secretKey]keptSecret{}
	}
	if _, ok := t.secrets[k]; !ok && len(t.secrets) >= maxKeptSecrets {
		now := t.now()
		for old, s := range t.secrets {
			if now.Sub(s.readAt) >= secretTTL {
				delete(t.secrets, old)
			}
		}
		if len(t.secrets) >= maxKeptSecrets {
			return // read again next time
		}
	}
	t.secrets[k] = keptSecret{value: v, readAt: t.now()}
}

// Refresh forgets the Secret values of the trigger key read more than
// secretRefreshEvery ago, so the next Trigger reads them again
// (triggers.Refresher: a delivery that failed to authenticate may have
// been signed with a rotated secret). It reports whether it forgot any.
func (t *TriggerRuns) Refresh(key types.NamespacedName) bool {
	at := &exagentv1.AgentTrigger{}
	if err := t.Client.Get(context.Background(), key, at); err != nil || at.Spec.Source == nil {
		return false
	}
	var refs []*exagentv1.SecretKeySelector
	for _, a := range []*exagentv1.TriggerAuth{authOf(at.Spec.Source)} {
		if a != nil {
			refs = append(refs, a.SigningSecretRef, a.BearerTokenSecretRef)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	forgot := false
	for _, ref := range refs {
		if ref == nil {
			continue
		}
		k := secretKey{namespace: key.Namespace, name: ref.Name, key: ref.Key}
		if v, ok := t.secrets[k]; ok && t.now().Sub(v.readAt) >= secretRefreshEvery {
			delete(t.secrets, k)
			forgot = true
		}
	}
	return forgot
}

// authOf is the auth of a webhook or Alertmanager source (nil otherwise).
func authOf(src *exagentv1.TriggerSource) *exagentv1.TriggerAuth {
	switch {
	case src.Webhook != nil:
		return src.Webhook.Auth
	case src.Alertmanager != nil:
		return src.Alertmanager.Auth
	}
	return nil
}

// compile is at's compiled expressions and template, once per generation.
func (t *TriggerRuns) compile(at *exagentv1.AgentTrigger) (*compiledTrigger, error) {
	key := client.ObjectKeyFromObject(at)
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.compiled[key]; ok && c.generation == at.Generation && c.uid == at.UID {
		return c, nil
	}
	setter, err := triggerSetter(at, t.Signer)
	if err != nil {
		return nil, problem(exagentv1.ReasonNoRequester, err)
	}
	input, err := trigger.Compile(at.Spec.Input)
	if err != nil {
		return nil, problem(exagentv1.ReasonInvalidExpression, fmt.Errorf("AgentTrigger %s spec.input: %w", key, err))
	}
	c := &compiledTrigger{generation: at.Generation, uid: at.UID, input: input, template: *at.Spec.RunTemplate.DeepCopy(), setter: setter}
	if at.Spec.DedupKey != "" {
		if c.dedupKey, err = trigger.Compile(at.Spec.DedupKey); err != nil {
			return nil, problem(exagentv1.ReasonInvalidExpression, fmt.Errorf("AgentTrigger %s spec.dedupKey: %w", key, err))
		}
	}
	if t.compiled == nil {
		t.compiled = map[types.NamespacedName]*compiledTrigger{}
	}
	t.compiled[key] = c
	return c, nil
}

// CreateRun creates the run of tr for an event: named from the trigger,
// key and the window at falls in (a random name when there is no key).
func (t *TriggerRuns) CreateRun(ctx context.Context, tr *triggers.Trigger, input, key string, at time.Time) (string, bool, error) {
	t.mu.Lock()
	c, ok := t.compiled[tr.NamespacedName]
	t.mu.Unlock()
	if !ok || c.generation != tr.Generation {
		return "", false, fmt.Errorf("AgentTrigger %s changed while its delivery was handled: retry", tr.NamespacedName)
	}
	spec := c.template.RunSpec(&c.setter)
	spec.Input = c.template.Input + "\n\n" + input
	run := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: tr.Namespace,
			Labels:    map[string]string{exagentv1.LabelTrigger: exagentv1.LabelValue(tr.Name)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: exagentv1.GroupVersion.String(), Kind: "AgentTrigger",
				Name: tr.Name, UID: c.uid}},
		},
		Spec: spec,
	}
	if key == "" {
		run.GenerateName = triggerRunPrefix(tr.Name)
	} else {
		window := int64(tr.DedupWindow / time.Second)
		if window < 1 {
			window = 1
		}
		sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", tr.Name, key, at.Unix()/window))
		run.Name = triggerRunPrefix(tr.Name) + hex.EncodeToString(sum[:])[:12]
	}
	if err := t.Client.Create(ctx, run); err != nil {
		if apierrors.IsAlreadyExists(err) && run.Name != "" {
			return t.made(ctx, tr, run.Name, c.uid)
		}
		return "", false, fmt.Errorf("creating a run of AgentTrigger %s: %w", tr.NamespacedName, err)
	}
	t.remember(tr.NamespacedName, run.Name, at)
	return run.Name, true, nil
}

// made answers a Create that found the run's name taken: a duplicate
// when the run is this trigger's (another replica, or a retry, made it),
// else triggers.ErrNameTaken — a run of that name that someone else made
// is never taken for the trigger's.
func (t *TriggerRuns) made(ctx context.Context, tr *triggers.Trigger, name string, uid types.UID) (string, bool, error) {
	existing := &exagentv1.AgentRun{}
	if err := t.APIReader.Get(ctx, types.NamespacedName{Namespace: tr.Namespace, Name: name}, existing); err != nil {
		return "", false, fmt.Errorf("reading run %s/%s, whose name AgentTrigger %s's run takes: %w", tr.Namespace, name, tr.Name, err)
	}
	if !ownedBy(existing, uid) {
		return "", false, fmt.Errorf("%w: run %s/%s exists and is not AgentTrigger %s's", triggers.ErrNameTaken, tr.Namespace, name, tr.Name)
	}
	return name, false, nil
}

// triggerSetter is the person who last set at's spec, as admission
// stamped (and, with a signer, sealed) it.
func triggerSetter(at *exagentv1.AgentTrigger, signer *authz.Signer) (exagentv1.Actor, error) {
	var setter exagentv1.Actor
	if err := json.Unmarshal([]byte(at.Annotations[exagentv1.AnnotationSpecSetBy]), &setter); err != nil || setter.Username == "" {
		return setter, fmt.Errorf("%w: AgentTrigger %s/%s has no %s stamped by admission: apply its spec again",
			errTriggerUnsealed, at.Namespace, at.Name, exagentv1.AnnotationSpecSetBy)
	}
	if signer != nil {
		if err := signer.VerifyTrigger(at); err != nil {
			return setter, fmt.Errorf("%w: AgentTrigger %s/%s: %v; apply its spec again", errTriggerUnsealed, at.Namespace, at.Name, err)
		}
	}
	return setter, nil
}

// errTriggerUnsealed: the trigger's setter is not admission's.
var errTriggerUnsealed = errors.New("the trigger's setter is not sealed")

// TriggerProblem is a trigger that cannot make runs until its author
// fixes it (its Ready condition's reason and message), as opposed to an
// error reading the cluster, which a retry may clear.
type TriggerProblem struct {
	Reason string
	Err    error
}

func (p *TriggerProblem) Error() string { return p.Err.Error() }
func (p *TriggerProblem) Unwrap() error { return p.Err }

func problem(reason string, err error) error { return &TriggerProblem{Reason: reason, Err: err} }

// recentTTL is how long a created run counts as active without the cache
// showing it: far longer than the cache's lag, far shorter than a run.
const recentTTL = time.Minute

// remember records a run this process created, for ActiveRuns.
func (t *TriggerRuns) remember(key types.NamespacedName, name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.recent == nil {
		t.recent = map[types.NamespacedName]map[string]time.Time{}
	}
	if t.recent[key] == nil {
		t.recent[key] = map[string]time.Time{}
	}
	t.recent[key][name] = at
}

// ActiveRuns counts tr's runs that have not ended: those the cache shows
// (owned by this trigger, not terminal) and those this process created
// within recentTTL that it does not show yet.
func (t *TriggerRuns) ActiveRuns(ctx context.Context, tr *triggers.Trigger) (int, error) {
	t.mu.Lock()
	c, ok := t.compiled[tr.NamespacedName]
	t.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("AgentTrigger %s is not compiled", tr.NamespacedName)
	}
	runs := &exagentv1.AgentRunList{}
	var reader client.Reader = t.Client
	if owns, err := t.Owner.ownsTrigger(ctx, tr.NamespacedName); err != nil {
		return 0, err
	} else if !owns {
		reader = t.APIReader // another shard's: this cache does not hold its runs
	}
	if err := reader.List(ctx, runs, client.InNamespace(tr.Namespace),
		client.MatchingLabels{exagentv1.LabelTrigger: exagentv1.LabelValue(tr.Name)}); err != nil {
		return 0, fmt.Errorf("listing the runs of AgentTrigger %s: %w", tr.NamespacedName, err)
	}
	seen := map[string]bool{}
	active := 0
	for i := range runs.Items {
		run := &runs.Items[i]
		if !ownedBy(run, c.uid) {
			continue
		}
		seen[run.Name] = true
		if !run.Status.Phase.IsTerminal() {
			active++
		}
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, at := range t.recent[tr.NamespacedName] {
		switch {
		case seen[name] || now.Sub(at) > recentTTL:
			delete(t.recent[tr.NamespacedName], name)
		default:
			active++
		}
	}
	return active, nil
}

func (t *TriggerRuns) now() time.Time {
	if t.Clock == nil {
		return time.Now()
	}
	return t.Clock.Now()
}

// ownedBy reports whether run has an owner reference to uid.
func ownedBy(run *exagentv1.AgentRun, uid types.UID) bool {
	for _, o := range run.OwnerReferences {
		if o.UID == uid {
			return true
		}
	}
	return false
}

// triggerRunPrefix is the prefix of a trigger's runs' names (a name of
// at most 63 characters with a 12-character suffix).
func triggerRunPrefix(name string) string {
	if len(name) > 50 {
		name = name[:50]
	}
	return strings.TrimRight(name, "-.") + "-"
}
