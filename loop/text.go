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
	"strings"
	"unicode/utf8"

	"github.com/exagent-io/exagent/internal/clip"
)

// truncateUTF8 bounds s to max bytes without splitting a rune; the CRD's
// maxLength counts characters, so a byte bound is always within it. Bytes
// that are not UTF-8 become U+FFFD first: the apiserver's JSON would
// replace them anyway, and a value must read back as it was hashed.
func truncateUTF8(s string, max int) string {
	return clip.Bytes(validUTF8(s), max, "")
}

// validUTF8 returns s with every run of bytes that is not UTF-8 replaced
// by U+FFFD, as the apiserver's JSON encoding would store it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, string(utf8.RuneError))
}

// escapedLen is the length of s once encoding/json writes it as a JSON
// string, quotes included: what a value costs in the stored status (the
// apiserver writes custom resources with encoding/json). Control
// characters and the HTML-sensitive <, > and & take 6 bytes each, so a
// value's escaped size can be six times its length.
func escapedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
