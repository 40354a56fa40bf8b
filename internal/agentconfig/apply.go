package agentconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/limactl-mcp/limactl-mcp/internal/fsutil"
)

// Apply writes the changes that alter their file, each atomically (a temporary file in the same
// directory, then a rename), creating parent directories as needed. An existing file keeps its
// mode, and a symbolic link keeps pointing where it did (its target is rewritten). A file that
// changed since Plan read it is not overwritten: Apply stops with an error, and Plan can be run
// again.
func Apply(changes []Change) error {
	for _, c := range changes {
		if !c.Changed() {
			continue
		}
		if err := applyChange(c); err != nil {
			return err
		}
	}
	return nil
}

func applyChange(c Change) error {
	if c.Within != "" {
		if err := staysInside(c.Within, c.Path); err != nil {
			return err
		}
	}
	target, err := followLinks(c.Path)
	if err != nil {
		return err
	}
	current, err := readConfigFile(target)
	if err != nil {
		return err
	}
	if (current == nil) != (c.Before == nil) || !bytes.Equal(current, c.Before) {
		return fmt.Errorf("%s changed since it was read; nothing was written to it, run the command again", c.Path)
	}
	mode := c.NewFileMode
	if mode == 0 {
		mode = 0o644
	}
	if info, err := os.Stat(target); err == nil {
		mode = info.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(target, c.After, mode)
}

// followLinks returns the file that path names once symbolic links are followed, even when the
// last one dangles (so that writing it creates the link's target rather than replacing the link).
func followLinks(path string) (string, error) {
	for range 40 {
		info, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}
