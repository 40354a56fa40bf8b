//go:build !unix

package tools

// hostProcessAlive cannot tell here: every server is taken as alive (its processes are
// ended by discard).
func hostProcessAlive(int) bool { return true }
