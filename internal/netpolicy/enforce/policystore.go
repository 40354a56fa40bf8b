package enforce

import (
	"os"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// policyStore is the proxy's view of the policy files, keyed by uid. It is read again when
// the directory changes (ensure and remove write by rename, which changes it) or the file of
// the uid asked about does: a policy changed from the host holds from the next connection.
type policyStore struct {
	dir string

	mu       sync.Mutex
	dirStamp fileStamp
	byUID    map[int]storedPolicy
}

type storedPolicy struct {
	user   UserPolicy
	policy netpolicy.Policy
	stamp  fileStamp
}

// fileStamp tells whether a file changed since it was read.
type fileStamp struct {
	ino   uint64
	size  int64
	mtime time.Time
}

func stampOf(path string) fileStamp {
	st, err := os.Lstat(path)
	if err != nil {
		return fileStamp{}
	}
	s := fileStamp{size: st.Size(), mtime: st.ModTime()}
	if ino, ok := inodeOf(st); ok {
		s.ino = ino
	}
	return s
}

func newPolicyStore(dir string) *policyStore { return &policyStore{dir: dir} }

// lookup returns the policy of the agent user with this uid; ok is false for any other uid.
func (s *policyStore) lookup(uid int) (UserPolicy, netpolicy.Policy, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dirStamp := stampOf(s.dir)
	stale := s.byUID == nil || dirStamp != s.dirStamp
	if sp, ok := s.byUID[uid]; ok && !stale {
		stale = stampOf(Layout{ConfigDir: s.dir}.policyFile(sp.user.User)) != sp.stamp
	}
	if stale {
		s.reload(dirStamp)
	}
	sp, ok := s.byUID[uid]
	return sp.user, sp.policy, ok
}

// reload reads every policy file again; files that do not check out are left out (their
// users get no network: the proxy refuses an unknown uid).
func (s *policyStore) reload(dirStamp fileStamp) {
	users, _, err := readAllPolicies(s.dir)
	byUID := map[int]storedPolicy{}
	if err == nil {
		for _, u := range users {
			path := Layout{ConfigDir: s.dir}.policyFile(u.User)
			p, _ := netpolicy.Parse(u.Policy)
			byUID[u.UID] = storedPolicy{user: u, policy: p, stamp: stampOf(path)}
		}
	}
	s.byUID = byUID
	s.dirStamp = dirStamp
}
