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

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// checksumsName is the checksum file, in sha256sum's format
// (sha256sum -c checksums.txt verifies a download).
const checksumsName = "checksums.txt"

// checksums returns the hex SHA-256 of each file of dir, by name.
func checksums(dir string, names []string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	for _, name := range names {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("hashing %s: %w", name, err)
		}
		out[name] = hex.EncodeToString(h.Sum(nil))
	}
	return out, nil
}

// writeChecksums writes DIR/checksums.txt over names, sorted.
func writeChecksums(dir string, names []string) (map[string]string, error) {
	sums, err := checksums(dir, names)
	if err != nil {
		return nil, err
	}
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	var b strings.Builder
	for _, name := range sorted {
		fmt.Fprintf(&b, "%s  %s\n", sums[name], name)
	}
	return sums, os.WriteFile(filepath.Join(dir, checksumsName), []byte(b.String()), 0o644)
}
