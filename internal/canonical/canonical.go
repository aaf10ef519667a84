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

package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// JSON returns the RFC 8785 (JCS) form of v: object members sorted
// by their UTF-16 code units, no insignificant whitespace, strings escaped
// minimally, numbers in ECMAScript form. v may be a Go value or JSON text
// (json.RawMessage or []byte).
//
// One documented deviation keeps a canonical form from changing what a tool
// receives: an integer literal (no fraction, no exponent) is written as its
// exact decimal digits instead of being rounded through float64. For every
// integer |n| < 2^53 that is exactly what JCS writes too; beyond it JCS
// would silently alter an id like 12345678901234567890.
func JSON(v any) ([]byte, error) {
	var raw []byte
	switch t := v.(type) {
	case json.RawMessage:
		raw = t
	case []byte:
		raw = t
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("canonical json: marshal: %w", err)
		}
		raw = b
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("canonical json: decode: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("canonical json: trailing data after the value")
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Hash returns "sha256:<hex>" of b.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// SHA256Hex is the sha256 of s in hex, without a prefix: the form a
// ValueRef and a segment's name carry.
func SHA256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Short is the beginning of hash h, for a message a person reads: as
// long as "sha256:" and 12 hex digits.
func Short(h string) string {
	const n = len("sha256:") + 12
	if len(h) > n {
		return h[:n]
	}
	return h
}

// HashOf is Hash(JSON(v)).
func HashOf(v any) (string, error) {
	b, err := JSON(v)
	if err != nil {
		return "", err
	}
	return Hash(b), nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		s, err := canonicalNumber(string(t))
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case string:
		writeCanonicalString(buf, t)
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return lessUTF16(keys[i], keys[j]) })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeCanonicalString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, t[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("canonical json: unexpected %T", v)
	}
	return nil
}

// lessUTF16 orders strings by UTF-16 code units, as JCS requires (it
// differs from byte order for characters beyond the BMP).
func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

func writeCanonicalString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(buf, `\u%04x`, r)
			} else {
				buf.WriteRune(r)
			}
		}
	}
	buf.WriteByte('"')
}

// canonicalNumber writes a JSON number literal in ECMAScript
// Number.prototype.toString form (JCS §3.2.2.3), except integer literals,
// which keep their exact digits (see JSON).
func canonicalNumber(lit string) (string, error) {
	if !strings.ContainsAny(lit, ".eE") {
		n, ok := new(big.Int).SetString(lit, 10)
		if !ok {
			return "", fmt.Errorf("canonical json: bad number %q", lit)
		}
		return n.String(), nil // "-0" becomes "0" as JCS requires
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("canonical json: number %q is not a finite double", lit)
	}
	if f == 0 {
		return "0", nil
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	format := byte('e')
	if f >= 1e-6 && f < 1e21 {
		format = 'f'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if i := strings.IndexByte(s, 'e'); i > 0 && s[i+2] == '0' {
		s = s[:i+2] + s[i+3:] // Go writes 1e+09, ECMAScript 1e+9
	}
	return sign + s, nil
}
