package enforce

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/atomicfile"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// UserPolicy is one agent user's policy as kept in ConfigDir/NAME.json: what the rules and the
// proxy are built from.
type UserPolicy struct {
	User   string `json:"user"`
	UID    int    `json:"uid"`
	Policy string `json:"policy"`
	// SecretHosts are the bound host:port whose CONNECTs go to the session's relay, and
	// RelayUID the Lima user who must be listening there (secrets.go).
	SecretHosts []string `json:"secret_hosts,omitempty"`
	// RuleTargets are the host:port that method and path rules only name, whose CONNECTs go
	// to the relay too, with the rules: it terminates TLS and checks each request.
	RuleTargets []string `json:"rule_targets,omitempty"`
	RelayUID    int      `json:"relay_uid,omitempty"`
	// RelayCommands: the session's relay reads the command behind a connection on its line
	// (netpolicy.RelayLine), which the proxy then sends to it for a rule target. Set by the
	// set-up of a runner that writes it (its host's relay is of the same build); a relay of an
	// older host would read the command as part of the rules and refuse the connection.
	RelayCommands bool `json:"relay_commands,omitempty"`
	// Relays are the relays of the session's processes, oldest first, with what each binds
	// (relays.go); SecretHosts and RuleTargets are theirs together. None: an older build's
	// file, whose one relay listens at netpolicy.RelaySocketName("").
	Relays []RelayEntry `json:"relays,omitempty"`
}

// parsed checks a policy file's content (the name, the uid, the spec) and returns its policy.
func (u UserPolicy) parsed() (netpolicy.Policy, error) {
	if err := CheckUserName(u.User); err != nil {
		return netpolicy.Policy{}, err
	}
	if u.UID <= 0 {
		return netpolicy.Policy{}, fmt.Errorf("user %s: uid %d is not an agent's", u.User, u.UID)
	}
	p, err := netpolicy.Parse(u.Policy)
	if err != nil {
		return netpolicy.Policy{}, err
	}
	if !p.Restricted() {
		return netpolicy.Policy{}, fmt.Errorf("user %s: a policy file never holds open", u.User)
	}
	if err := u.checkSecrets(p); err != nil {
		return netpolicy.Policy{}, err
	}
	return p, nil
}

// readPolicyFile reads one policy file, refusing one that root does not own or that others may
// write: the file is the policy, and the guest is hostile.
func readPolicyFile(path string) (UserPolicy, netpolicy.Policy, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return UserPolicy{}, netpolicy.Policy{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return UserPolicy{}, netpolicy.Policy{}, err
	}
	if err := checkRootOwned(path, st); err != nil {
		return UserPolicy{}, netpolicy.Policy{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return UserPolicy{}, netpolicy.Policy{}, fmt.Errorf("%s: %w", path, err)
	}
	var u UserPolicy
	if err := json.Unmarshal(data, &u); err != nil {
		return UserPolicy{}, netpolicy.Policy{}, fmt.Errorf("%s: %w", path, err)
	}
	p, err := u.parsed()
	if err != nil {
		return UserPolicy{}, netpolicy.Policy{}, fmt.Errorf("%s: %w", path, err)
	}
	if filepath.Base(path) != u.User+".json" {
		return UserPolicy{}, netpolicy.Policy{}, fmt.Errorf("%s holds the policy of %s", path, u.User)
	}
	return u, p, nil
}

// checkRootOwned refuses a file that is not a regular file of root's that only root may write.
func checkRootOwned(path string, st os.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || !st.Mode().IsRegular() || sys.Uid != 0 || st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is not a regular file owned by root and writable only by root: ignored", path)
	}
	return nil
}

// readAllPolicies reads every policy file in dir, sorted by user. A file that does not check
// out is left out and reported in problems (the others still hold).
func readAllPolicies(dir string) (users []UserPolicy, problems []error, err error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the policies in %s: %w", dir, err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		u, _, err := readPolicyFile(filepath.Join(dir, e.Name()))
		if err != nil {
			problems = append(problems, err)
			continue
		}
		users = append(users, u)
	}
	sort.Slice(users, func(i, j int) bool { return users[i].User < users[j].User })
	return users, problems, nil
}

// writeFileIfChanged writes data to path (mode, root's) through a temporary file and a rename
// (internal/atomicfile), unless the file already holds exactly that with that mode: ensure
// runs at every connect and should write nothing then. It says whether it wrote.
func writeFileIfChanged(path string, data []byte, mode os.FileMode) (bool, error) {
	if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() && st.Mode().Perm() == mode {
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) == os.Geteuid() {
				return false, nil
			}
		}
	}
	if err := atomicfile.WriteFile(path, data, mode, true); err != nil {
		return false, err
	}
	return true, nil
}

// ensureRootDir makes dir (and its parents) exist as root's directories that others may read
// but not write, fixing the mode and owner of dir itself if someone changed them.
func ensureRootDir(dir string) error { return ensureRootDirMode(dir, 0o755) }

// ensureRootDirMode is ensureRootDir with dir's own mode perm (its parents made 0755 less the
// umask, as MkdirAll does).
func ensureRootDirMode(dir string, perm os.FileMode) error {
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && (int(sys.Uid) != os.Geteuid() || st.Mode().Perm() != perm) {
		if err := os.Lchown(dir, os.Geteuid(), os.Getegid()); err != nil {
			return err
		}
		if err := os.Chmod(dir, perm); err != nil {
			return err
		}
	}
	return nil
}
