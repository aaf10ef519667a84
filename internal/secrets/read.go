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

package secrets

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Read returns the value of sel's key in the Secret sel names in
// namespace, read with r (an APIReader: past the cache). A missing Secret
// keeps the apiserver's error (apierrors.IsNotFound sees through the
// wrapping); a missing key is an error naming the Secret and the key.
func Read(ctx context.Context, r client.Reader, namespace string, sel exagentv1.SecretKeySelector) (string, error) {
	s := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: sel.Name}, s); err != nil {
		return "", fmt.Errorf("secret %s/%s: %w", namespace, sel.Name, err)
	}
	v, ok := s.Data[sel.Key]
	if !ok {
		return "", &KeyNotFoundError{Namespace: namespace, Name: sel.Name, Key: sel.Key}
	}
	return string(v), nil
}

// KeyNotFoundError is a Secret that exists without the key asked for.
type KeyNotFoundError struct{ Namespace, Name, Key string }

func (e *KeyNotFoundError) Error() string {
	return fmt.Sprintf("secret %s/%s has no key %q", e.Namespace, e.Name, e.Key)
}
