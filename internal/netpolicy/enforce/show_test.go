package enforce

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// `net show` answers what `net ensure` would for a user that is set up, from root's files
// alone, and makes nothing: no directory, lock, policy, environment or log file.
func TestShowSetsNothingUp(t *testing.T) {
	root := t.TempDir()
	l := Layout{ConfigDir: filepath.Join(root, "etc"), LogDir: filepath.Join(root, "log"), HomeBase: filepath.Join(root, "home"), ProxyAddrs: []string{"127.0.0.1:929"}}
	passwd := filepath.Join(root, "passwd")
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/bash\nlmcp-abc:x:1234:1234::"+l.HomeBase+"/lmcp-abc:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tree := func() string {
		var names []string
		_ = filepath.WalkDir(root, func(p string, _ os.DirEntry, _ error) error { names = append(names, p); return nil })
		sort.Strings(names)
		return strings.Join(names, "\n")
	}

	before := tree()
	if _, err := show(l, "lmcp-none", passwd); !errors.Is(err, ErrNoAgentUser) {
		t.Errorf("a user the guest does not have: %v", err)
	}
	if _, err := show(l, "root", passwd); err == nil {
		t.Error("a user that is not an agent user was shown")
	}
	res, err := show(l, "lmcp-abc", passwd)
	if err != nil || res.UID != 1234 || res.Home != l.HomeBase+"/lmcp-abc" || res.Policy != "" || res.EnvFile != "" || res.Log != filepath.Join(l.LogDir, "lmcp-abc.jsonl") || res.Proxy != "127.0.0.1:929" {
		t.Fatalf("a user without a policy file: %+v, %v", res, err)
	}
	if after := tree(); after != before {
		t.Errorf("show made something:\n%s\nwas\n%s", after, before)
	}

	// Set up: its policy and its environment file.
	if err := os.MkdirAll(l.ConfigDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(uid int) {
		data, _ := json.Marshal(UserPolicy{User: "lmcp-abc", UID: uid, Policy: "allow:a.org"})
		if err := os.WriteFile(l.policyFile("lmcp-abc"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1234)
	if err := os.WriteFile(l.envFile("lmcp-abc"), []byte("HTTPS_PROXY=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before = tree()
	res, err = show(l, "lmcp-abc", passwd)
	if err != nil || res.Policy != "allow:a.org" || res.EnvFile != l.envFile("lmcp-abc") {
		t.Fatalf("a user set up: %+v, %v", res, err)
	}
	if after := tree(); after != before {
		t.Errorf("show made something:\n%s\nwas\n%s", after, before)
	}
	// A user made anew under the same name is not the session's.
	write(999)
	if _, err := show(l, "lmcp-abc", passwd); err == nil || !strings.Contains(err.Error(), "set it up again") {
		t.Errorf("a policy file of another uid: %v", err)
	}
}
