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
