package staging_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Secrets stay on the host in nested repositories too: a submodule's and a nested clone's
// ignored files (their own .gitignore) are never staged; their .git is staged so that git
// works there, but is never a change: what the agent does to it is reported apart.
func TestNestedRepositoriesKeepTheirSecrets(t *testing.T) {
	f := setup(t)
	w := func(rel, data string) {
		p := filepath.Join(f.root, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(data), 0o644))
	}
	// A submodule, from a local repository.
	lib := filepath.Join(t.TempDir(), "lib")
	must(t, os.MkdirAll(lib, 0o755))
	must(t, os.WriteFile(filepath.Join(lib, ".gitignore"), []byte("secrets.env\ncache/\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(lib, "lib.go"), []byte("package lib\n"), 0o644))
	git(t, lib, "init", "-q")
	git(t, lib, "add", "-A")
	git(t, lib, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "lib")
	git(t, f.root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "vendor/lib")
	git(t, f.root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "sub")
	w("vendor/lib/secrets.env", "SUB_SECRET=1\n")
	w("vendor/lib/cache/blob", "cached secret\n")
	// A nested clone the top repository does not track, with its own ignore rules.
	w("tools/x/.gitignore", "token.txt\n")
	w("tools/x/x.go", "package x\n")
	w("tools/x/token.txt", "NESTED_SECRET=1\n")
	git(t, filepath.Join(f.root, "tools/x"), "init", "-q")

	s, _ := f.open(t, false)
	listing := f.guest(t, "find . -print")
	for _, secret := range []string{"secrets.env", "cache", "token.txt"} {
		if strings.Contains(listing, secret) {
			t.Errorf("%s reached the guest:\n%s", secret, listing)
		}
	}
	for _, want := range []string{"./vendor/lib/lib.go", "./tools/x/x.go", "./vendor/lib/.git", "./tools/x/.git/HEAD"} {
		if !strings.Contains(listing, want+"\n") {
			t.Errorf("%s not staged:\n%s", want, listing)
		}
	}
	for _, e := range s.Baseline.Entries {
		if strings.Contains(string(e.Path), "secret") || strings.Contains(string(e.Path), "token") {
			t.Errorf("in the baseline: %s", e.Path)
		}
	}
	// The agent sets a command in a nested repository's config and makes a repository of
	// its own: reported as git metadata, never as a change to apply.
	f.guest(t, "git -C tools/x config core.fsmonitor 'touch /tmp/pwned' && mkdir -p other && git -C other init -q && echo x > other/f.txt && mkdir -p deep/.GIT && echo '[core]' > deep/.GIT/config")
	cs, err := s.GuestChanges(context.Background())
	must(t, err)
	for _, c := range cs.Changes {
		if strings.Contains(strings.ToLower(string(c.Path)), ".git/") || strings.HasSuffix(strings.ToLower(string(c.Path)), ".git") {
			t.Errorf("git metadata reported as a change: %s %s", c.Kind, c.Path)
		}
	}
	meta := strings.Join(func() (out []string) {
		for _, m := range cs.GitMetadata {
			out = append(out, string(m))
		}
		return
	}(), " ")
	for _, want := range []string{"tools/x/.git/config", "other/.git", "deep/.GIT/config"} {
		if !strings.Contains(" "+meta+" ", " "+want+" ") {
			t.Errorf("%s not reported as git metadata: %s", want, meta)
		}
	}
	if got := kinds(cs); !strings.Contains(got, "added other/f.txt") {
		t.Errorf("ordinary changes: %s", got)
	}
}

// pending_changes shows the agent the baseline, never the host's edits made after staging.
func TestPendingDiffNeverShowsLaterHostEdits(t *testing.T) {
	f := setup(t)
	s, _ := f.open(t, false)
	must(t, os.WriteFile(filepath.Join(f.root, "main.go"), []byte("package main\n// HOST-SECRET=hunter2\n"), 0o644))
	f.guest(t, "rm main.go && echo 'package lib // agent' > src/lib/util.go")
	for _, p := range []string{"main.go", "src/lib/util.go"} {
		d, err := s.PendingDiff(context.Background(), p)
		must(t, err)
		if strings.Contains(d, "HOST-SECRET") {
			t.Errorf("the diff of %s shows the host's later edit:\n%s", p, d)
		}
	}
	d, err := s.PendingDiff(context.Background(), "src/lib/util.go")
	must(t, err)
	if !strings.Contains(d, "-package lib\n") || !strings.Contains(d, "+package lib // agent") {
		t.Errorf("the diff against the baseline is lost:\n%s", d)
	}
}

// An edit of the same size made within the second the file was staged keeps its mtime's
// second: it must still be found (it was missed, and a later sync could overwrite it).
// The file's mtime is set a little ahead so that it is no older than the staging second
// however long staging takes on a loaded machine (a file edited in the second it was staged
// is the same case: its mtime is not older than a second before the baseline was recorded).
func TestRacyEditWithinTheStagingSecond(t *testing.T) {
	f := setup(t)
	p := filepath.Join(f.root, "main.go")
	mtime := time.Now().Add(30 * time.Second)
	must(t, os.Chtimes(p, mtime, mtime))
	s, _ := f.open(t, false)
	f.guest(t, fmt.Sprintf("printf 'package mine\\n' > main.go && touch -d @%d.9 main.go", mtime.Unix()))
	cs, err := s.GuestChanges(context.Background())
	must(t, err)
	if got := kinds(cs); got != "modified main.go" {
		t.Errorf("changes: %q", got)
	}
}
