package udiff

import (
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Describe says in words what an entry is ("file of 12 bytes (mode 644)", "symlink -> x"),
// for the lines that tell an agent or a person what changed. A link target is shown as
// termsafe.Path shows names.
func Describe(e *tree.Entry) string {
	switch e.Type {
	case tree.Symlink:
		return "symlink -> " + termsafe.Path(string(e.Target))
	case tree.Dir:
		return fmt.Sprintf("directory (mode %o)", e.Mode&0o777)
	case tree.File:
		return fmt.Sprintf("file of %d bytes (mode %o)", e.Size, e.Mode&0o7777)
	}
	return "special file (fifo, socket or device)"
}
