package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/pkg/sftp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
)

// fsError turns an error from the guest's filesystem into a message that tells the agent
// what to do next. The first words match Lima's server ("file does not exist", "permission
// denied") so that clients checking for them keep working.
func fsError(path string, err error) error {
	var se *sftp.StatusError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("file does not exist: %s (check the path with list_directory or glob)", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("permission denied: %s (the guest user may not access it; check its permissions with list_directory, or use another path)", path)
	case guest.IsConnectionError(err):
		return fmt.Errorf("the connection to the guest was lost (%v); retry: the next call reconnects", err)
	case errors.As(err, &se) && se.FxCode() == sftp.ErrSSHFxFailure:
		return fmt.Errorf("%s: the guest refused the operation (%v); the path may be a directory, on a full or read-only filesystem, or not a regular file", path, err)
	case errors.Is(err, os.ErrClosed):
		return fmt.Errorf("the connection to the guest was closed; retry")
	}
	return fmt.Errorf("%s: %w", path, err)
}

func notADirectory(path string) error {
	return fmt.Errorf("not a directory: %s (it is a file: use read_file to read it, or list its parent directory)", path)
}

func isADirectory(path string) error {
	return fmt.Errorf("is a directory: %s (use list_directory to see what it contains, or pass the path of a file inside it)", path)
}

// notRegular refuses a fifo, socket or device (also through a link): opening one would block
// or never end.
func notRegular(path string, mode fs.FileMode, tool string) error {
	return fmt.Errorf("not a regular file: %s (%s); %s works on regular files only: use run_shell_command for special files", path, mode.Type(), tool)
}

// kindOf words what a path that is not a regular file leads to: its type bits as ls shows them
// ("p---------" for a fifo) when the guest gave them, else its kind.
func kindOf(e *guest.NotRegularError) string {
	if e.Mode.Type() != 0 {
		return e.Mode.Type().String()
	}
	return string(e.Kind)
}
