package staging

import "testing"

func TestCountDiffLines(t *testing.T) {
	for _, c := range []struct {
		diff     string
		add, del int
	}{
		{"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n+c\n", 2, 1},
		{"diff --git a/x b/x\nBinary or large files differ\n", -1, -1},
		{"diff --git a/x b/x\nold mode 100644\nnew mode 100755\n", -1, -1},
		{"diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+--- not a header\n", 1, 0},
		{"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- removed\n+++ added\n", 1, 1},
		{"diff --git a/x b/x\n--- a/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", 0, 1},
	} {
		if a, d := countDiffLines(c.diff); a != c.add || d != c.del {
			t.Errorf("countDiffLines(%q) = %d, %d; want %d, %d", c.diff, a, d, c.add, c.del)
		}
	}
}
