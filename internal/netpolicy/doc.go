// Package netpolicy is the vocabulary of a session's network policy that both sides speak: a
// Policy and its spec (Parse), a log Entry, a user's record (Totals, Summary, Record) and the
// answers of the runner's `net` subcommands (EnsureResult, Record), with the checks that read
// them back from the guest (ReadLog, ParseRecord, ParseTotals) as untrusted text.
//
// It is not the enforcement: the agent user, the firewall rules, the allowlist proxy and the
// log writer are internal/netpolicy/enforce, which only the guest runner links. The host
// binary links this package alone (TestHostLinksNoEnforcement checks it with `go list -deps`).
// It imports only the standard library, and nothing that opens a socket or runs a tool.
package netpolicy
