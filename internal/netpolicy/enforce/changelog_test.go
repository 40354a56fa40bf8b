package enforce

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A change of policy is recorded (and only a change), read back in the user's report, and the
// file stays bounded.
func TestPolicyChangesRecorded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("net report runs as root")
	}
	dir := t.TempDir()
	l := Layout{ConfigDir: filepath.Join(dir, "net"), LogDir: filepath.Join(dir, "log")}
	if err := os.MkdirAll(l.LogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{"", "none"}, {"none", "allow:a.org"}, {"allow:a.org", "allow:a.org"}, {"allow:a.org", "allow:a.org,b.org:443"}, {"allow:a.org,b.org:443", "open"}} {
		if err := logPolicyChange(l, "lmcp-x", c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := Report(l, "lmcp-x", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rec.Changes {
		got = append(got, c.From+" -> "+c.To)
	}
	if want := " -> none|none -> allow:a.org|allow:a.org -> allow:a.org,b.org:443|allow:a.org,b.org:443 -> open"; strings.Join(got, "|") != want {
		t.Errorf("changes %q, want %q", strings.Join(got, "|"), want)
	}
	if st, err := os.Stat(l.changesFile("lmcp-x")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("changes file: %v %v", st, err)
	}
	// Bounded: thousands of changes leave at most maxChangesFile, the newest last.
	long := "allow:" + strings.Repeat("a", 60) + ".org"
	for i := 0; i < 3000; i++ {
		if err := logPolicyChange(l, "lmcp-x", "none", long); err != nil {
			t.Fatal(err)
		}
	}
	if err := logPolicyChange(l, "lmcp-x", "none", "allow:last.org"); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(l.changesFile("lmcp-x"))
	if st.Size() > maxChangesFile {
		t.Errorf("changes file is %d bytes", st.Size())
	}
	rec, err = Report(l, "lmcp-x", 0)
	if err != nil || len(rec.Changes) != 50 || rec.Changes[49].To != "allow:last.org" {
		t.Errorf("after many changes: %v, %d changes", err, len(rec.Changes))
	}
	// A link planted where the file goes is not followed.
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), l.changesFile("lmcp-y")); err != nil {
		t.Fatal(err)
	}
	if err := logPolicyChange(l, "lmcp-y", "none", "allow:a.org"); err == nil {
		t.Error("logged through a symbolic link")
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("a file was made through the link")
	}
}
