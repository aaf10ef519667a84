package eventqueue

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// eventName is client-go's: the object's name and the instant in hex,
// with a retry's number when the first was taken.
func eventName(object string, now time.Time, retry int) string {
	if retry == 0 {
		return fmt.Sprintf("%s.%x", object, now.UnixNano())
	}
	return fmt.Sprintf("%s.%x%x", object, now.UnixNano(), retry)
}

// truncate bounds s to n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
