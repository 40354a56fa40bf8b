// Package background is the runner's background processes: each started under a supervisor
// of its own (the runner binary run as `limactl-mcp-runner bg-supervise DIR`, Supervise) that
// outlives the runner and its SSH session, keeps the output in bounded segments and records
// how the command ended, all in a directory per process under the user's cache (store.go);
// and the reading, listing, signalling and ending of them, by id, from those directories, so
// that any runner of the guest user can, not only the one that started them.
//
// Everything read back from those directories is the agent's to write: it is read with caps
// and checked. It is not the foreground's commands (internal/runner's exec), and the
// environment and the command line it starts a process with are procenv's.
package background
