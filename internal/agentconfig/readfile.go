package agentconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// readConfigFile returns the file's content, or nil (and no error) if it does not exist.
func readConfigFile(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("refusing to change %s: it is not a regular file", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = []byte{} // exists but empty: keep it distinct from "does not exist"
	}
	return b, nil
}
