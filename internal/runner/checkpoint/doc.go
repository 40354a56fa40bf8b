// Package checkpoint is the runner's checkpoints of a session's tree: taking one (Create:
// every entry's type, mode, link target and content, the content kept once by its hash),
// listing them, restoring one (Restore: the tree made exactly what it holds, through an
// os.Root of the tree, all or nothing as far as the store goes), and giving one's manifest
// for a review on the host. The store is a directory per session under the user's cache
// (store.go); the agent can write anything there, so everything read back is capped and
// checked. Cache keeps what a long-lived runner read last.
//
// It is not the host's view of checkpoints (internal/staging, internal/tools) and it leaves
// every .git alone.
package checkpoint
