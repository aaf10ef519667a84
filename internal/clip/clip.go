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

package clip

import "unicode/utf8"

// Ellipsis is the mark of a cut in a message a person reads.
const Ellipsis = "…"

// Bytes returns s when it has at most n bytes. Otherwise it returns the
// longest prefix of s that ends on a rune boundary, followed by mark, in
// at most n bytes together; when mark alone does not leave room for any
// of s, the prefix without it. Never more than n bytes (nothing for n <= 0).
func Bytes(s string, n int, mark string) string {
	switch {
	case len(s) <= n:
		return s
	case n <= 0:
		return ""
	case len(mark) >= n:
		return prefix(s, n)
	}
	return prefix(s, n-len(mark)) + mark
}

// prefix is s cut to at most n bytes, never inside a rune (n < len(s)).
func prefix(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
