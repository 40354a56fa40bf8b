package agentconfig

import (
	"fmt"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	var lines []string
	for i := 1; i <= 20; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	before := strings.Join(lines, "\n") + "\n"
	edited := append([]string{}, lines...)
	edited[1] = "line 2 changed"
	edited[17] = "line 18 changed"
	edited = append(edited[:10], append([]string{"inserted"}, edited[10:]...)...)
	// Seven unchanged lines (11-17) part the second and third hunks, as in GNU diff -u.
	after := strings.Join(edited, "\n") + "\n"

	got := Change{Path: "/p/f.json", Before: []byte(before), After: []byte(after)}.Diff()
	want := `--- /p/f.json
+++ /p/f.json
@@ -1,5 +1,5 @@
 line 1
-line 2
+line 2 changed
 line 3
 line 4
 line 5
@@ -8,6 +8,7 @@
 line 8
 line 9
 line 10
+inserted
 line 11
 line 12
 line 13
@@ -15,6 +16,6 @@
 line 15
 line 16
 line 17
-line 18
+line 18 changed
 line 19
 line 20
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestDiffNewFileAndNoNewline(t *testing.T) {
	got := Change{Path: "/p/new.json", After: []byte("{\n}")}.Diff()
	want := "--- /dev/null\n+++ /p/new.json\n@@ -0,0 +1,2 @@\n+{\n+}\n\\ No newline at end of file\n"
	if got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
	got = Change{Path: "/p/f", Before: []byte("a\nb"), After: []byte("a\nc")}.Diff()
	want = "--- /p/f\n+++ /p/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
	if got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
	if d := (Change{Path: "/p/f", Before: []byte("x"), After: []byte("x")}).Diff(); d != "" {
		t.Errorf("unchanged file diff %q", d)
	}
	got = Change{Path: "/p/e", Before: []byte{}, After: []byte("x\n")}.Diff()
	if !strings.HasPrefix(got, "--- /p/e\n+++ /p/e\n@@ -0,0 +1 @@\n+x\n") {
		t.Errorf("empty file diff %q", got)
	}
}

func TestDiffJoinsHunksSixLinesApart(t *testing.T) {
	before := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	after := "1\nB\n3\n4\n5\n6\n7\n8\nI\n10\n"
	got := Change{Path: "f", Before: []byte(before), After: []byte(after)}.Diff()
	want := "--- f\n+++ f\n@@ -1,10 +1,10 @@\n 1\n-2\n+B\n 3\n 4\n 5\n 6\n 7\n 8\n-9\n+I\n 10\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
