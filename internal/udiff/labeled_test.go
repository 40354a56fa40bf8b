package udiff

import "testing"

func TestLabeled(t *testing.T) {
	tests := []struct{ name, from, to, old, new, want string }{
		{"labels as given", "/p/f.json", "/p/f.json", "a\nb\n", "a\nc\n",
			"--- /p/f.json\n+++ /p/f.json\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"},
		{"new file", "/dev/null", "/p/new", "", "x\ny",
			"--- /dev/null\n+++ /p/new\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n"},
		{"equal texts: the header alone", "/dev/null", "/p/empty", "", "",
			"--- /dev/null\n+++ /p/empty\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Labeled(tt.from, tt.to, tt.old, tt.new); got != tt.want {
				t.Errorf("got:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}
