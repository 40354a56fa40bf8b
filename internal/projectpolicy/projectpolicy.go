// Package projectpolicy keeps a project's network policy on the host, outside the project:
// one small file per working directory in the user's configuration directory
// ($XDG_CONFIG_HOME/limactl-mcp/projects/, else the system's: os.UserConfigDir), written by
// `configure` and `network ... --save`, read by serve and shell when no --network is given.
// It is never in the directory the agent edits: an agent can propose changes to the project's
// files, and review applies them, but nothing there decides what the agent may reach.
package projectpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/fsutil"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// File is what the policy file holds.
type File struct {
	// Workdir is the project's directory (resolved): the file's key, checked when it is read.
	Workdir string `json:"workdir"`
	// Network is the policy's spec, canonical (netpolicy.Parse).
	Network string    `json:"network"`
	Saved   time.Time `json:"saved"`
}

// maxFileBytes bounds a policy file (a policy of many hosts is a few kB).
const maxFileBytes = 256 << 10

// Dir is the directory of the project policy files.
func Dir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory for the project's network policy: %w", err)
	}
	return filepath.Join(base, "limactl-mcp", "projects"), nil
}

// Path is the policy file of the project in workdir (an absolute, resolved path). It is an
// error when that file would be inside workdir (a configuration directory inside the project),
// where the agent could propose to change it.
func Path(workdir string) (string, error) {
	if !filepath.IsAbs(workdir) {
		return "", fmt.Errorf("project policy: %q is not an absolute path", workdir)
	}
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(filepath.Clean(workdir)))
	p := filepath.Join(dir, filepath.Base(workdir)+"-"+hex.EncodeToString(sum[:8])+".json")
	if resolved, err := filepath.EvalSymlinks(filepath.Dir(dir)); err == nil && tree.Within(workdir, resolved) || tree.Within(workdir, p) {
		return "", fmt.Errorf("the project's network policy file would be %s, inside the project %s, where the agent's changes go: set XDG_CONFIG_HOME to a directory outside it", p, workdir)
	}
	return p, nil
}

// Load reads the policy of the project in workdir; ok is false when it has none. A file that
// is not one of ours (bad JSON, another directory's, a policy that does not parse) is an error
// that names it, never a policy.
func Load(workdir string) (f File, path string, ok bool, err error) {
	path, err = Path(workdir)
	if err != nil {
		return File{}, "", false, err
	}
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return File{}, path, false, nil
	}
	if err != nil {
		return File{}, path, false, fmt.Errorf("the project's network policy %s: %w", path, err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxFileBytes+1))
	if err != nil {
		return File{}, path, false, fmt.Errorf("the project's network policy %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return File{}, path, false, fmt.Errorf("the project's network policy %s is longer than %d bytes: not ours? remove it, or save a policy again (limactl mcp network INSTANCE set POLICY --save)", path, maxFileBytes)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return File{}, path, false, fmt.Errorf("the project's network policy %s is not valid JSON (%v): remove it, or save a policy again (limactl mcp network INSTANCE set POLICY --save)", path, err)
	}
	if filepath.Clean(f.Workdir) != filepath.Clean(workdir) {
		return File{}, path, false, fmt.Errorf("the project's network policy %s is for %q, not %s: remove it, or save a policy again", path, f.Workdir, workdir)
	}
	pol, err := netpolicy.Parse(f.Network)
	if err != nil {
		return File{}, path, false, fmt.Errorf("the project's network policy %s: %w", path, err)
	}
	f.Network = pol.String()
	return f, path, true, nil
}

// Save writes network (checked, kept canonical) as the policy of the project in workdir, and
// returns the file's path. The directory is the user's alone (0700), the file 0600.
func Save(workdir, network string) (string, error) {
	pol, err := netpolicy.Parse(network)
	if err != nil {
		return "", err
	}
	path, err := Path(workdir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("saving the project's network policy: %w", err)
	}
	data, _ := json.MarshalIndent(File{Workdir: filepath.Clean(workdir), Network: pol.String(), Saved: time.Now().UTC()}, "", "  ")
	if err := fsutil.WriteFileAtomic(path, append(data, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("saving the project's network policy: %w", err)
	}
	return path, nil
}
