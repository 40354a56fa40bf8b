package agentconfig

import (
	"bytes"
	"io/fs"
)

// Change is what Plan wants done to one configuration file.
type Change struct {
	// Path is the file's absolute path.
	Path string
	// Before is the file's content when Plan read it; nil if the file does not exist.
	Before []byte
	// After is the content to write. After equals Before when the file already says what it
	// should (running configure a second time produces only such changes).
	After []byte
	// Summary says in one line what the change is for, e.g. `MCP server "lima" runs "limactl mcp serve default"`.
	Summary string
	// Notes are plain statements the user should know, e.g. what the client cannot turn off.
	Notes []string
	// NewFileMode is the mode given to the file if Apply creates it; an existing file keeps its own.
	NewFileMode fs.FileMode
	// Within is the project directory a project config must stay inside, through any link
	// ("" for the user's own config).
	Within string
}

// Changed says whether applying c would alter the file.
func (c Change) Changed() bool {
	return c.Before == nil || !bytes.Equal(c.Before, c.After)
}

// Creates says whether applying c would create the file.
func (c Change) Creates() bool {
	return c.Before == nil
}
