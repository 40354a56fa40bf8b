package tree

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestNameSurvivesJSON(t *testing.T) {
	for _, n := range []Name{"plain/path.go", "", "ünï/日本", "bad\xff\xfename", "nul\x00byte"} {
		b, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		var back Name
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q: %v (%s)", n, err, b)
		}
		if back != n {
			t.Errorf("%q came back as %q (%s)", n, back, b)
		}
	}
}

func TestEntryOf(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "f"), []byte("hello"), 0o640))
	must(syscall.Chmod(filepath.Join(dir, "f"), 0o4750)) // setuid survives into Mode
	must(os.Mkdir(filepath.Join(dir, "d"), 0o755))
	must(os.Symlink("../elsewhere", filepath.Join(dir, "l")))
	must(syscall.Mkfifo(filepath.Join(dir, "p"), 0o600))
	for _, tc := range []struct {
		name   string
		kind   Kind
		mode   uint32
		size   int64
		target Name
	}{
		{"f", File, 0o4750, 5, ""},
		{"d", Dir, 0o755, 0, ""},
		{"l", Symlink, 0o777, 0, "../elsewhere"},
		{"p", Other, 0o600, 0, ""},
	} {
		full := filepath.Join(dir, tc.name)
		fi, err := os.Lstat(full)
		must(err)
		e, err := EntryOf("sub/"+tc.name, fi, func() (string, error) { return os.Readlink(full) })
		must(err)
		if e.Path != Name("sub/"+tc.name) || e.Type != tc.kind || e.Mode != tc.mode || e.Size != tc.size || e.Target != tc.target || e.MTime == 0 {
			t.Errorf("%s: %+v", tc.name, e)
		}
	}
	fi, err := os.Lstat(filepath.Join(dir, "l"))
	must(err)
	if _, err := EntryOf("l", fi, func() (string, error) { return "", os.ErrPermission }); err == nil {
		t.Error("a link whose target cannot be read gave no error")
	}
}

func TestInside(t *testing.T) {
	for _, tc := range []struct {
		root, p, rel string
		ok, below    bool
	}{
		{"/home/me/p", "/home/me/p", ".", true, false},
		{"/home/me/p", "/home/me/p/a/b", "a/b", true, true},
		{"/home/me/p", "/home/me/pp", "", false, false},
		{"/home/me/p", "/home/me", "", false, false},
		{"/home/me/p/", "/home/me/p/x", "x", true, true},
		{"/", "/etc", "etc", true, true},
		{"/", "/", ".", true, false},
		{"", "/x", "", false, false},
		{"a", "a/b", "b", true, true},
		{"a", "ab", "", false, false},
		{".", "a/b", "a/b", true, true},
		{".", ".", ".", true, false},
		{".", "..", "", false, false},
		{".", "../x", "", false, false},
	} {
		rel, ok := Inside(tc.root, tc.p)
		if rel != tc.rel || ok != tc.ok || Below(tc.root, tc.p) != tc.below {
			t.Errorf("Inside(%q, %q) = %q, %v (below %v)", tc.root, tc.p, rel, ok, Below(tc.root, tc.p))
		}
	}
}

func TestWithinAny(t *testing.T) {
	for _, tc := range []struct {
		roots []string
		p     string
		want  bool
	}{
		{nil, "a", false},
		{[]string{"a"}, "a", true},
		{[]string{"a"}, "a/b/c", true},
		{[]string{"a"}, "ab", false},
		{[]string{"x", "d/e"}, "d/e/f", true},
		{[]string{"x", "d/e"}, "d", false},
		{[]string{"."}, "anything/at/all", true},
		{[]string{"."}, "../out", false},
		{[]string{""}, "a", false},
	} {
		if got := WithinAny(tc.roots, tc.p); got != tc.want {
			t.Errorf("WithinAny(%q, %q) = %v", tc.roots, tc.p, got)
		}
	}
}
