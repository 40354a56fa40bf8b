package enforce

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

func owner(t *testing.T, path string) uint32 {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Uid
}

func TestGiveTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	const staging, agent = 4241, 4242
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	tree := filepath.Join(base, "tree")
	for _, d := range []string{outside, tree, filepath.Join(tree, "sub", "deeper")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("x"), 0o600)
	os.WriteFile(filepath.Join(tree, "sub", "deeper", "file"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(tree, "rootfile"), []byte("x"), 0o644) // root's: not the staging user's
	os.WriteFile(filepath.Join(tree, "linked"), []byte("x"), 0o644)
	os.Link(filepath.Join(tree, "linked"), filepath.Join(outside, "linked-too"))
	os.Symlink(outside, filepath.Join(tree, "escape"))
	os.Symlink(secret, filepath.Join(tree, "secret-link"))
	for _, p := range []string{tree, filepath.Join(tree, "sub"), filepath.Join(tree, "sub", "deeper"), filepath.Join(tree, "sub", "deeper", "file"),
		filepath.Join(tree, "linked"), filepath.Join(tree, "escape"), filepath.Join(tree, "secret-link")} {
		if err := os.Lchown(p, staging, staging); err != nil {
			t.Fatal(err)
		}
	}
	if err := giveTree(tree, staging, agent, agent); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]uint32{
		tree: agent, filepath.Join(tree, "sub", "deeper", "file"): agent, filepath.Join(tree, "escape"): agent,
		filepath.Join(tree, "rootfile"): 0, filepath.Join(tree, "linked"): staging, secret: 0, outside: 0,
	} {
		if got := owner(t, path); got != want {
			t.Errorf("%s is uid %d's, want %d's", path, got, want)
		}
	}
	// Again, with nothing to do; and refusals.
	if err := giveTree(tree, staging, agent, agent); err != nil {
		t.Fatal(err)
	}
	if err := giveTree(filepath.Join(tree, "escape"), staging, agent, agent); err == nil {
		t.Error("a symlink was followed")
	}
	if err := giveTree(outside, staging, agent, agent); err == nil {
		t.Error("root's directory was handed over")
	}
	if err := giveTree("relative", staging, agent, agent); err == nil {
		t.Error("a relative path was taken")
	}
}

func TestLogBookRotates(t *testing.T) {
	dir := t.TempDir()
	b := newLogBook(dir)
	b.maxSize = 1000
	defer b.close()
	for i := 0; i < 30; i++ {
		if err := b.write("lmcp-x", netpolicy.Entry{Host: "a.test", Port: 443, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy}); err != nil {
			t.Fatal(err)
		}
	}
	cur, err1 := os.Stat(filepath.Join(dir, "lmcp-x.jsonl"))
	old, err2 := os.Stat(filepath.Join(dir, "lmcp-x.jsonl.1"))
	if err1 != nil || err2 != nil || cur.Size() > 1000 || old.Size() > 1000 || cur.Mode().Perm() != 0o600 || old.Mode().Perm() != 0o600 {
		t.Fatalf("after rotation: %v %v %v %v", cur, old, err1, err2)
	}
}
