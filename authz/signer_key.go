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
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SigningKeyDataKey is the key of the signing key in its Secret.
const SigningKeyDataKey = "key"

// DefaultSigningSecretName is the Secret, in the manager's namespace, that
// holds the key every manager replica signs and verifies decisions with.
// Its name is the one first deployed, so an upgraded manager keeps the key
// that signed what is stored.
const DefaultSigningSecretName = "exagent-decision-seal"

// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=get;create

// LoadSigner returns the Signer whose key is in Secret ref, creating the Secret
// with a random 32-byte key when it does not exist. Replicas racing to
// create it converge on whichever was created first. r must read the
// apiserver directly (the manager's APIReader): a cached client would watch
// every Secret of the cluster.
func LoadSigner(ctx context.Context, r client.Reader, w client.Writer, ref types.NamespacedName) (*Signer, error) {
	secret := &corev1.Secret{}
	err := r.Get(ctx, ref, secret)
	if apierrors.IsNotFound(err) {
		key := make([]byte, minKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("generating the decision signing key: %w", err)
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name: ref.Name, Namespace: ref.Namespace,
				Labels: map[string]string{"app.kubernetes.io/name": "exagent"},
			},
			Immutable: ptrTo(true),
			Type:      corev1.SecretTypeOpaque,
			Data:      map[string][]byte{SigningKeyDataKey: key},
		}
		err = w.Create(ctx, secret)
		if apierrors.IsAlreadyExists(err) {
			secret = &corev1.Secret{}
			err = r.Get(ctx, ref, secret)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("loading the decision signing key from Secret %s: %w", ref, err)
	}
	s, err := NewSigner(secret.Data[SigningKeyDataKey])
	if err != nil {
		return nil, fmt.Errorf("signing key in Secret %s: %w", ref, err)
	}
	return s, nil
}

func ptrTo[T any](v T) *T { return &v }
