package staging

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
)

// A working directory has one unnamed session per instance (the default: `serve` without
// --session), and any number of named ones (`--session NAME`), each a separate staged copy in
// the guest with its own state, baseline, review and agent user. The unnamed session's ID is
// SessionID(workdir), as before sessions had names, so that a session staged by an earlier
// version is still found; a named session's ID hashes the name in too, so it never meets it.

// sessionNamePattern is what a session name may be: short, and safe in a guest path, a file
// name, a guest user's ID and a shell command line without quoting.
var sessionNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// DefaultSessionName is what a person calls the unnamed session: `--session default` is it.
const DefaultSessionName = "default"

// ParseSessionName checks the value of `--session` and returns the session's name: "" for the
// unnamed session (no flag, or "default").
func ParseSessionName(flag string) (string, error) {
	if flag == "" || flag == DefaultSessionName {
		return "", nil
	}
	if !sessionNamePattern.MatchString(flag) {
		return "", fmt.Errorf("--session %q: a session name is 1 to 32 letters, digits, '-' or '_', starting with a letter or digit", flag)
	}
	return flag, nil
}

// SessionIDOf names the session called name ("" for the unnamed one) of a working directory.
func SessionIDOf(workdir, name string) string {
	if name == "" {
		return SessionID(workdir)
	}
	// NUL cannot be in a path, so no workdir and name pair hashes the text of another.
	sum := sha256.Sum256([]byte(filepath.Clean(workdir) + "\x00session\x00" + name))
	return hex.EncodeToString(sum[:6])
}

// SessionLabel is how a person is shown a session name: the unnamed one is "default".
func SessionLabel(name string) string {
	if name == "" {
		return DefaultSessionName
	}
	return name
}

// SessionFlag is the `--session NAME` a command line needs to reach the session called name
// ("" for the unnamed one, which needs none), with a leading space.
func SessionFlag(name string) string {
	if name == "" {
		return ""
	}
	return " --session " + name
}
