// Package clip owns the one way exagent shortens text to a byte bound:
// every message, excerpt and error it stores or sends is cut here, on a
// rune boundary, mark included in the bound. (CRD maxLength counts
// characters, so a value of n bytes always fits a maxLength of n.)
package clip
