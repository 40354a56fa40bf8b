// Package version holds the version stamped into the binary at release time.
package version

import "runtime/debug"

// Version is set with -ldflags "-X github.com/limactl-mcp/limactl-mcp/internal/version.Version=..."
// by the release build; otherwise it comes from the module version `go install` records.
var Version = ""

func init() {
	if Version != "" {
		return
	}
	Version = "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		Version = bi.Main.Version
	}
}
