package udiff

import "github.com/limactl-mcp/limactl-mcp/internal/tree"

// IsBinary says whether data is binary as git decides it for a diff (tree.IsBinary). Binary
// content is described, never shown as hunks.
func IsBinary(data []byte) bool { return tree.IsBinary(data) }
