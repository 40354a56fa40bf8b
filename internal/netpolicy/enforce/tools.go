package enforce

import (
	"os/exec"
	"path/filepath"
)

// findTool finds a system command in PATH or, since a caller's PATH may lack them, in the
// directories system commands live in.
func findTool(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		if p, err2 := exec.LookPath(filepath.Join(dir, name)); err2 == nil {
			return p, nil
		}
	}
	return "", err
}
