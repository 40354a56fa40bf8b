package workspace

import (
	"errors"
	"testing"
)

func TestIdentity(t *testing.T) {
	w := Identity("/home/u/proj")
	for in, want := range map[string]string{"/etc/os-release": "/etc/os-release", "/a/../b/": "/b", "/": "/"} {
		got, err := w.ToGuest(in)
		if err != nil || got != want {
			t.Errorf("ToGuest(%q) = %q, %v; want %q", in, got, err, want)
		}
		if back := w.ToHost(got); back != got {
			t.Errorf("ToHost(%q) = %q", got, back)
		}
	}
	_, err := w.ToGuest("src/main.go")
	if !errors.Is(err, ErrRelative) || !contains(err.Error(), "/home/u/proj/src/main.go") {
		t.Errorf("relative path: %v", err)
	}
	if _, err := w.ToGuest(""); err == nil {
		t.Error("empty path: want an error")
	}
	if _, err := w.ToGuest("/a\x00b"); err == nil {
		t.Error("NUL: want an error")
	}
}

func TestStaged(t *testing.T) {
	w := Staged("/home/u/proj", "/var/lib/stage/proj")
	cases := map[string]string{
		"/home/u/proj":          "/var/lib/stage/proj",
		"/home/u/proj/a/b.go":   "/var/lib/stage/proj/a/b.go",
		"/home/u/project2/x":    "/home/u/project2/x", // a sibling with a common prefix is not inside
		"/home/u/proj/../other": "/home/u/other",
		"/etc/hosts":            "/etc/hosts",
	}
	for in, want := range cases {
		got, err := w.ToGuest(in)
		if err != nil || got != want {
			t.Errorf("ToGuest(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got := w.ToHost("/var/lib/stage/proj/a/b.go"); got != "/home/u/proj/a/b.go" {
		t.Errorf("ToHost = %q", got)
	}
	if got := w.HostText("/var/lib/stage/proj/x.go:3: error"); got != "/home/u/proj/x.go:3: error" {
		t.Errorf("HostText = %q", got)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}

// A workdir the agent knows through a symbolic link: its paths and the real ones both reach
// the guest copy; what comes back is under the path the agent knows.
func TestShownAs(t *testing.T) {
	w := Staged("/real/proj", "/real/proj").ShownAs("/link/proj")
	for in, want := range map[string]string{
		"/link/proj":        "/real/proj",
		"/link/proj/a/b.go": "/real/proj/a/b.go",
		"/real/proj/c":      "/real/proj/c",
		"/link/other":       "/link/other",
		"/link/projx":       "/link/projx",
	} {
		if got, err := w.ToGuest(in); err != nil || got != want {
			t.Errorf("ToGuest(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got := w.ToHost("/real/proj/a"); got != "/link/proj/a" {
		t.Errorf("ToHost = %q", got)
	}
	if got := w.HostText("error in /real/proj/a.go:3"); got != "error in /link/proj/a.go:3" {
		t.Errorf("HostText = %q", got)
	}
	if got := w.DefaultDir(); got != "/link/proj" {
		t.Errorf("DefaultDir = %q", got)
	}
	// Relocated guest copy.
	r := Staged("/private/tmp/p", "/home/u.guest/.staged/p").ShownAs("/tmp/p")
	if got, _ := r.ToGuest("/tmp/p/x"); got != "/home/u.guest/.staged/p/x" {
		t.Errorf("relocated ToGuest = %q", got)
	}
	if got := r.ToHost("/home/u.guest/.staged/p/x"); got != "/tmp/p/x" {
		t.Errorf("relocated ToHost = %q", got)
	}
	// The same path: nothing changes.
	if s := Staged("/p", "/p"); s.ShownAs("/p") != s {
		t.Error("ShownAs of the same path made a new workspace")
	}
}
