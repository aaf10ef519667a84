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

package tools

import "github.com/exagent-io/exagent/loop"

// mcpListingOverhead and mcpToolBytes are what a listing costs the
// refresher's cache, which mcplist.Options.MaxListingBytes and MaxBytes
// bound: its strings and schemas (the structure around them is small
// beside them). They live here, with the listing type, so that fetch can
// add them up as it reads, to stop at the bound rather than find it passed
// at the end, and the refresher counts what it keeps (mcpListingBytes)
// the same way.
const mcpListingOverhead int64 = 64

// mcpToolBytes is what one tool of a listing costs the cache.
func mcpToolBytes(t *loop.MCPToolInfo) int64 {
	n := 64 + int64(len(t.Name)+len(t.Description)+len(t.InputSchema))
	if t.Annotations != nil {
		n += 32 + int64(len(t.Annotations.Title))
	}
	return n
}

// mcpListingBytes is what a whole listing costs the cache (mcplist.Size).
func mcpListingBytes(l *loop.MCPListing) int64 {
	n := mcpListingOverhead
	for i := range l.Tools {
		n += mcpToolBytes(&l.Tools[i])
	}
	return n
}
