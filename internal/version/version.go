// Package version holds the version stamped into the binary at release time.
package version

import (
	"os"
	"runtime/debug"
)

// Version is set with -ldflags "-X github.com/limactl-mcp/limactl-mcp/internal/version.Version=..."
// by the release build; otherwise it comes from the module version `go install` records, or
// from the commit a development build was made from ("devel-1a2b3c4d5e6f", "-dirty" when it
// had uncommitted changes).
var Version = ""

func init() {
	if Version != "" {
		return
	}
	Version = "devel"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		Version = v
		return
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev != "" {
		Version += "-" + rev[:min(len(rev), 12)] + dirty
	}
}

// Describe is what --version prints: the version, whose plugin this is (ours replaces Lima's
// bundled limactl-mcp on PATH, so a person needs to tell them apart), and the binary's path.
func Describe() string {
	s := "limactl-mcp version " + Version + " (github.com/limactl-mcp/limactl-mcp, which replaces Lima's bundled limactl-mcp)\n"
	if exe, err := os.Executable(); err == nil {
		s += "binary: " + exe + "\n"
	}
	return s
}
