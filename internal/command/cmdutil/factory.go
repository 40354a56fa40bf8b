// Package cmdutil is what every command shares, as gh's pkg/cmdutil: the Factory of the
// dependencies a command's Options copy (the IO streams), the Selector that resolves the
// instance, working directory and session a command names (once, for every command), and the
// flags and completions the commands have in common. It is not where a command's own logic
// goes: each command's package (internal/command/Xcmd) holds its cobra wiring, Options and Run.
package cmdutil

import (
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

// Factory carries what the commands depend on, made once by main; each command's Options copy
// only what they use. The opener is not here: a nil Options.Open means the host's
// (sessionopen.HostOpener, made by Resolve), so that a test's Options stay comparable.
type Factory struct {
	IOStreams *iostreams.IOStreams
}

// New is the Factory of a process whose streams are ios.
func New(ios *iostreams.IOStreams) *Factory {
	return &Factory{IOStreams: ios}
}
