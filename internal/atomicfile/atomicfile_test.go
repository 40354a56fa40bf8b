package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// leftovers lists the new files Create left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".limactl-mcp-") {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestWriteFileReplaces(t *testing.T) {
	for name, write := range writers {
		t.Run(name, func(t *testing.T) { testWriteFileReplaces(t, write) })
	}
}

func testWriteFileReplaces(t *testing.T, WriteFile func(string, []byte, os.FileMode, bool) error) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("old content, longer than the new"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Lstat(p)
	if err := WriteFile(p, []byte("new"), 0o640, true); err != nil {
		t.Fatal(err)
	}
	after, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("content %q", b)
	}
	if os.SameFile(before, after) {
		t.Error("the file was written in place, not replaced")
	}
	if after.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", after.Mode())
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

func TestWriteFileModes(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	dir := t.TempDir()
	// Exact: setuid, setgid and sticky included, whatever the umask.
	exact := filepath.Join(dir, "exact")
	if err := WriteFile(exact, []byte("x"), ModeOf(0o6757), true); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(exact, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o7777 != 0o6757 {
		t.Errorf("exact mode %o, want 6757", st.Mode&0o7777)
	}
	// Not exact: less the umask, as open(2) makes a file.
	masked := filepath.Join(dir, "masked")
	if err := WriteFile(masked, []byte("x"), 0o666, false); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(masked); fi.Mode().Perm() != 0o640 {
		t.Errorf("masked mode %v, want 0640 (0666 less 027)", fi.Mode().Perm())
	}
}

// A link at the target's name is replaced, never written through.
func TestWriteFileReplacesALinkNotItsTarget(t *testing.T) {
	for name, write := range writers {
		t.Run(name, func(t *testing.T) { testWriteFileReplacesALinkNotItsTarget(t, write) })
	}
}

// writers are the two ways a file is written: made durable and renamed, or swapped in
// unsynced (swapInto).
var writers = map[string]func(string, []byte, os.FileMode, bool) error{"WriteFile": WriteFile, "WriteFileNoSync": WriteFileNoSync}

func testWriteFileReplacesALinkNotItsTarget(t *testing.T, WriteFile func(string, []byte, os.FileMode, bool) error) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "f")
	if err := os.Symlink(victim, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new"), 0o644, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "untouched" {
		t.Fatalf("written through the link: %q", b)
	}
	if fi, _ := os.Lstat(p); !fi.Mode().IsRegular() {
		t.Fatalf("%s is %v, want a regular file", p, fi.Mode())
	}
}

// A failed rename (over a directory that is not empty) leaves the target alone and no new file.
func TestReplaceFailureRemovesTheNewFile(t *testing.T) {
	for name, write := range writers {
		t.Run(name, func(t *testing.T) { testReplaceFailureRemovesTheNewFile(t, write) })
	}
}

func testReplaceFailureRemovesTheNewFile(t *testing.T, WriteFile func(string, []byte, os.FileMode, bool) error) {
	dir := t.TempDir()
	target := filepath.Join(dir, "d")
	if err := os.MkdirAll(filepath.Join(target, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(target, []byte("x"), 0o644, false); err == nil {
		t.Fatal("a file renamed over a directory that is not empty")
	}
	if fi, err := os.Lstat(target); err != nil || !fi.IsDir() {
		t.Fatalf("the target: %v %v", fi, err)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

// Close leaves a new file for the caller to rename (a restore's staged content), made
// durable; Discard still removes it; Discard after Replace leaves the target.
func TestCloseKeepsDiscardRemoves(t *testing.T) {
	dir := t.TempDir()
	p, err := Create(dir, "staged", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write([]byte("content")); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p.Name()); err != nil || string(b) != "content" {
		t.Fatalf("after Close: %q %v", b, err)
	}
	p.Discard()
	if _, err := os.Lstat(p.Name()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after Discard: %v", err)
	}

	q, err := Create(dir, "t", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	q.SkipSync()
	if _, err := q.Write([]byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := q.Replace(filepath.Join(dir, "t")); err != nil {
		t.Fatal(err)
	}
	q.Discard()
	if b, err := os.ReadFile(filepath.Join(dir, "t")); err != nil || string(b) != "kept" {
		t.Fatalf("after Replace and Discard: %q %v", b, err)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}

// Through a root, a directory swapped for a link out of it leads nowhere.
func TestCreateInStaysInTheRoot(t *testing.T) {
	rootDir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(rootDir, "d")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if p, err := CreateIn(root, "d", "f", 0o600); err == nil {
		p.Discard()
		t.Fatal("a new file made through a link out of the root")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("written outside the root: %v", ents)
	}
	if err := os.Mkdir(filepath.Join(rootDir, "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := CreateIn(root, "e", "f", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write([]byte("in")); err != nil {
		t.Fatal(err)
	}
	if err := p.Replace("e/f"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(rootDir, "e", "f")); err != nil || string(b) != "in" {
		t.Fatalf("%q %v", b, err)
	}
}
