package enforce

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/atomicfile"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// maxChangesFile is where a user's changes file is cut to its newer half: it is bounded
// whatever the host asks (each change is a person's command, so it is small in practice).
const maxChangesFile = 256 << 10

func (l Layout) changesFile(user string) string {
	return filepath.Join(l.LogDir, user+".changes.jsonl")
}

// heldPolicy is the policy user's policy file holds now, "" when it has none (or one that does
// not check out: then any policy written is a change).
func heldPolicy(l Layout, user string) string {
	_, p, err := readPolicyFile(l.policyFile(user))
	if err != nil {
		return ""
	}
	return p.String()
}

// logPolicyChange appends a change of user's policy to its changes file (root's, 0600, in the
// log directory, no link followed), cutting the file to its newer half past maxChangesFile.
// A change that cannot be logged does not undo the change: the error is for the caller to say.
func logPolicyChange(l Layout, user, from, to string) error {
	if from == to {
		return nil
	}
	line, err := json.Marshal(netpolicy.PolicyChange{Time: time.Now().UTC(), From: from, To: to})
	if err != nil {
		return err
	}
	path := l.changesFile(user)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return errors.Join(err, errors.New(path+" is not a regular file"))
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || st.Size()+int64(len(line)) < maxChangesFile {
		return err
	}
	data, err := readRootFile(path, maxChangesFile/2)
	if err != nil {
		return err
	}
	if i := indexNewline(data); i >= 0 {
		data = data[i+1:] // the first line read is cut
	}
	return atomicfile.WriteFile(path, data, 0o600, true)
}

func indexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// readChanges is the last changes of user's policy, for its report.
func readChanges(l Layout, user string) ([]netpolicy.PolicyChange, error) {
	data, err := readRootFile(l.changesFile(user), maxChangesFile)
	if err != nil {
		return nil, err
	}
	return netpolicy.ParseChanges(data, netpolicy.MaxRecordChanges), nil
}
