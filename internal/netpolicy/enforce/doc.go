// Package enforce enforces a session's network policy inside the guest, where the agent
// cannot lift it: the agent's commands run as a per-session user without sudo; iptables and
// ip6tables rules matched on that user's uid let it reach only loopback (DNS included in what is
// refused); an allowlist proxy owned by root, on guest loopback, serves the host names the
// policy allows; and every attempt, through the proxy or refused directly, is logged per user.
//
// Only the guest runner links it: the host side reaches it through the runner's `net`
// subcommands (ensure, remove, release, report, as, proxy), run with sudo -n, and reads their
// answers with the vocabulary of internal/netpolicy (the policy, the log entry, the record),
// which this package speaks. It imports only the standard library and golang.org/x/sys, as the
// runner does.
package enforce
