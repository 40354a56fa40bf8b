package secrets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"strings"
	"syscall"
	"time"
)

// A session's placeholders are shared by every process of the session (serve and shell at
// once, a restart): the first one to set up makes them, and they are kept in the session's
// host state directory, so that the guest's environment holds the same placeholder for a name
// whichever process set it up last, and the relay of either puts the value in. Placeholders
// only: never a value.

const (
	// PlaceholdersFile keeps the session's placeholders (NAME to placeholder, JSON, 0600).
	PlaceholdersFile = "secrets-placeholders.json"
	// SecretsLockFile is locked (flock) while a process of the session takes or makes the
	// placeholders and the CA, so that two processes starting at once agree on both.
	SecretsLockFile = "secrets.lock"
	// secretsLockWait bounds the wait for another process of the session (it holds the lock
	// for a few file writes and a key generation).
	secretsLockWait = 30 * time.Second
	// maxPlaceholderLength is the guest's bound (netpolicy.SecretsSetup.Check).
	maxPlaceholderLength = 256
)

// placeholderFile is PlaceholdersFile's content.
type placeholderFile struct {
	Placeholders map[string]string `json:"placeholders"`
}

// lockSecrets takes the session's secrets lock in root, waiting at most secretsLockWait. It
// returns the function that releases it.
func lockSecrets(root *os.Root, dir string) (func(), error) {
	f, err := root.OpenFile(SecretsLockFile, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("secrets: the session's lock in %s: %w", dir, err)
	}
	deadline := time.Now().Add(secretsLockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("secrets: the session's lock in %s: %w", dir, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("secrets: another limactl-mcp of this session held its lock %s for over %v; try again once it is set up", SecretsLockFile, secretsLockWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sharePlaceholders gives s's secrets the placeholders kept in root for their names, and keeps
// there the placeholder of each name it had none for (or one of the wrong form: it gets the
// one s made). Names kept there that s does not hold stay (another process of the session may
// use them). A file that cannot be read as the session's placeholders is an error that says
// to remove it. The caller holds the session's secrets lock.
func (s *Set) sharePlaceholders(root *os.Root, dir string) error {
	kept := map[string]string{}
	data, err := readRootFile(root, PlaceholdersFile, 0o077)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("secrets: the session's placeholders in %s: %w (remove %s: the guest gets new placeholders)", dir, err, PlaceholdersFile)
	default:
		var pf placeholderFile
		if err := json.Unmarshal(data, &pf); err != nil {
			return fmt.Errorf("secrets: the session's placeholders in %s: %s is not what limactl-mcp writes (remove it: the guest gets new placeholders)", dir, PlaceholdersFile)
		}
		if pf.Placeholders != nil {
			kept = pf.Placeholders
		}
	}
	next := maps.Clone(kept)
	for i, sec := range s.secrets {
		if ph, ok := kept[sec.Name]; ok && samePlaceholderForm(ph, sec) {
			s.secrets[i].Placeholder = ph
			continue
		}
		next[sec.Name] = sec.Placeholder
	}
	for _, l := range s.logins {
		if ph, ok := kept[l.Kind.Name]; ok && samePlaceholderForm(ph, Secret{Placeholder: l.Mark, Value: "-"}) {
			l.Mark = ph
			continue
		}
		next[l.Kind.Name] = l.Mark
	}
	if maps.Equal(next, kept) {
		return nil
	}
	data, err = json.MarshalIndent(placeholderFile{Placeholders: next}, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFile(root, PlaceholdersFile, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("secrets: writing the session's placeholders in %s: %w", dir, err)
	}
	return nil
}

// samePlaceholderForm says whether ph may stand for sec in the guest: the prefix of the
// placeholder sec was given (the provider's, then PlaceholderMark), then at least
// MinPlaceholderLength letters and digits, no longer than the guest takes, and neither holding
// the value nor held in it.
func samePlaceholderForm(ph string, sec Secret) bool {
	i := strings.Index(sec.Placeholder, PlaceholderMark)
	if i < 0 || len(ph) > maxPlaceholderLength {
		return false
	}
	prefix := sec.Placeholder[:i+len(PlaceholderMark)]
	random, ok := strings.CutPrefix(ph, prefix)
	if !ok || len(random) < MinPlaceholderLength {
		return false
	}
	for _, c := range []byte(random) {
		if !strings.ContainsRune(placeholderAlphabet, rune(c)) {
			return false
		}
	}
	return !strings.Contains(ph, sec.Value) && !strings.Contains(sec.Value, ph)
}
