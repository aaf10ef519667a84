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

package loop

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Cost is counted in billionths of the pricing's currency (nanos): prices
// have at most nine decimals (exagentv1.PricePattern), so a price per
// million tokens is an exact integer of nanos, and a response's cost is
// computed once, exactly, then rounded to the nearest nano.
const nanosPerUnit = 1_000_000_000

// Pricing is a parsed ModelPricing: nanos per million tokens of each kind.
type Pricing struct {
	Input, Output, CacheRead, CacheWrite int64
}

// ParsePricing parses an Agent's model.pricing (nil: no pricing, nothing
// is charged). An unset cache price is the input price.
func ParsePricing(p *exagentv1.ModelPricing) (*Pricing, error) {
	if p == nil {
		return nil, nil
	}
	var out Pricing
	for _, f := range []struct {
		name, value string
		into        *int64
	}{
		{"inputPerMillion", p.InputPerMillion, &out.Input},
		{"outputPerMillion", p.OutputPerMillion, &out.Output},
		{"cacheReadPerMillion", p.CacheReadPerMillion, &out.CacheRead},
		{"cacheWritePerMillion", p.CacheWritePerMillion, &out.CacheWrite},
	} {
		if f.value == "" {
			*f.into = -1
			continue
		}
		n, err := ParseNanos(f.value)
		if err != nil {
			return nil, fmt.Errorf("model.pricing.%s: %w", f.name, err)
		}
		*f.into = n
	}
	if out.Input < 0 {
		out.Input = 0
	}
	if out.Output < 0 {
		out.Output = 0
	}
	if out.CacheRead < 0 {
		out.CacheRead = out.Input
	}
	if out.CacheWrite < 0 {
		out.CacheWrite = out.Input
	}
	return &out, nil
}

// ParseNanos parses a non-negative decimal with at most nine decimals
// ("3", "0.30") into nanos.
func ParseNanos(s string) (int64, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(whole) > 12 || len(frac) > 9 || strings.Contains(frac, ".") {
		return 0, fmt.Errorf("%q is not a decimal with at most 12 digits and 9 decimals", s)
	}
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a non-negative decimal: %w", s, err)
	}
	var f uint64
	if frac != "" {
		if f, err = strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return 0, fmt.Errorf("%q is not a non-negative decimal: %w", s, err)
		}
	}
	return int64(w)*nanosPerUnit + int64(f), nil
}

// FormatNanos writes nanos as a decimal without trailing zeros ("12.5").
func FormatNanos(n int64) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	s := fmt.Sprintf("%s%d.%09d", sign, n/nanosPerUnit, n%nanosPerUnit)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// CostNanos is what one model response costs at p (0 without pricing).
// Cache-read and cache-written tokens are the part of promptTokens
// (ModelResponse) priced at their own rates; the rest of the prompt at
// the input price. Negative counts (a provider's nonsense) count as 0.
func CostNanos(p *Pricing, r ModelResponse) int64 {
	if p == nil {
		return 0
	}
	prompt := max(r.PromptTokens, 0)
	read, write := max(r.CacheReadTokens, 0), max(r.CacheCreationTokens, 0)
	plain := max(prompt-read-write, 0)
	sum := new(big.Int)
	for _, t := range [][2]int64{{plain, p.Input}, {read, p.CacheRead}, {write, p.CacheWrite}, {max(r.CompletionTokens, 0), p.Output}} {
		sum.Add(sum, new(big.Int).Mul(big.NewInt(t[0]), big.NewInt(t[1])))
	}
	// Per million tokens, rounded half up.
	sum.Add(sum, big.NewInt(500_000))
	sum.Quo(sum, big.NewInt(1_000_000))
	if !sum.IsInt64() {
		return 1<<63 - 1
	}
	return sum.Int64()
}
