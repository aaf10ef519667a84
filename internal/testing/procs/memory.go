package procs

// Memory is a process's resident set, in bytes (Process.Memory).
type Memory struct {
	// RSS is the resident set now: Anon (heap, stacks) plus File (the
	// binary's pages, shared and reclaimable) plus shared memory.
	RSS, Anon, File int64
	// Peak is the highest RSS over the process's life so far.
	Peak int64
}
