// Package archive owns a run's archive: its whole record — spec, final
// status, the whole transcript read back from its segments, every call,
// approval, receipt and decision — written as one CloudEvent
// io.exagent.run.archived, and the POST that delivers it (docs/architecture.md §15,
// docs/operating.md "Retention").
//
// A record is as large as the run's transcript (limits.maxTranscriptBytes,
// at most 64 MiB, and its escaping), so it is never built in memory: Write
// streams it from the run and its chain, resolving one sealed value at a
// time, and Send generates it twice — once into a counter and the
// Standard Webhooks signature (internal/notify's Signer), once onto the
// wire through a pipe, with the Content-Length the first pass measured.
// What stays in memory is what the caller read (the run and its verified
// chain); the caller bounds how many archives are built at once.
//
// Send dials through the client it is given (the manager's egress
// transport, internal/egress), never follows a redirect, and reads at most
// an excerpt of the sink's answer.
package archive
