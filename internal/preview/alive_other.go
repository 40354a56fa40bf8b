//go:build !unix

package preview

// processAlive cannot tell here: every server's record is taken as alive.
func processAlive(int) bool { return true }
