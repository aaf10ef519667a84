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
	"fmt"
	"time"
)

// Never is the Duration value that disables a timeout. It is distinct from an
// unset Duration, which means "use the default".
const Never Duration = "Never"

// Duration is a Go duration string ("90s", "1h30m") or the literal Never.
// The empty string means unset.
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^(Never|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
type Duration string

// IsSet reports whether the field was given at all.
func (d Duration) IsSet() bool { return d != "" }

// IsNever reports whether the duration is the literal Never.
func (d Duration) IsNever() bool { return d == Never }

// Parse returns the duration. never is true for Never; an unset Duration
// returns def. A malformed value is an error (admission rejects it first).
func (d Duration) Parse(def time.Duration) (dur time.Duration, never bool, err error) {
	switch d {
	case "":
		return def, false, nil
	case Never:
		return 0, true, nil
	}
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, false, fmt.Errorf("invalid duration %q: %w", string(d), err)
	}
	if v < 0 {
		return 0, false, fmt.Errorf("invalid duration %q: must not be negative", string(d))
	}
	return v, false, nil
}
