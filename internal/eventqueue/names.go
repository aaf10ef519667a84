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

package eventqueue

import (
	"fmt"
	"time"

	"github.com/exagent-io/exagent/internal/clip"
)

// eventName is client-go's: the object's name and the instant in hex,
// with a retry's number when the first was taken.
func eventName(object string, now time.Time, retry int) string {
	if retry == 0 {
		return fmt.Sprintf("%s.%x", object, now.UnixNano())
	}
	return fmt.Sprintf("%s.%x%x", object, now.UnixNano(), retry)
}

// truncate bounds s to n bytes (internal/clip), marking the cut.
func truncate(s string, n int) string { return clip.Bytes(s, n, clip.Ellipsis) }
