package agentconfig

import "github.com/limactl-mcp/limactl-mcp/internal/udiff"

// Diff renders the change as a unified diff ("" if the file would not change), with three lines
// of context as in diff -u. A file to be created is diffed against /dev/null.
func (c Change) Diff() string {
	if !c.Changed() {
		return ""
	}
	from := c.Path
	if c.Creates() {
		from = "/dev/null"
	}
	return udiff.Labeled(from, c.Path, string(c.Before), string(c.After))
}
