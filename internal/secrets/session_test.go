package secrets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSessionLogFile(t *testing.T) {
	dir := t.TempDir()
	set, err := NewSet(Secret{Name: "ANTHROPIC_API_KEY", Value: "sk-ant-api03-value-0123456789", Placeholder: NewPlaceholder("sk-ant-api03-", 108), Hosts: []string{"api.anthropic.com:443"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenSession(dir, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	setup := s.Setup()
	if err := setup.Check(); err != nil {
		t.Fatalf("the setup the guest gets does not check out: %v", err)
	}
	if strings.Contains(setup.CAPEM+strings.Join(setup.Env, ""), "value-0123456789") {
		t.Fatal("the setup holds the value")
	}
	for i := 0; i < 3; i++ {
		s.Log.Record(Use{Time: time.Now(), Host: "api.anthropic.com:443", Secrets: []string{"ANTHROPIC_API_KEY"}, Method: "POST", Path: "/v1/messages", Status: 200})
	}
	data, err := os.ReadFile(filepath.Join(dir, UsesFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "value-0123456789") {
		t.Fatal("the log holds the value")
	}
	if st, _ := os.Stat(filepath.Join(dir, UsesFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v", st.Mode().Perm())
	}
	l, err := ReadUses(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Summary(), "\n"); got != "ANTHROPIC_API_KEY used 3 times, only with api.anthropic.com" {
		t.Errorf("summary %q", got)
	}
	// A link where the log is: not followed (os.Root), the write given up.
	os.Remove(filepath.Join(dir, UsesFile))
	outside := filepath.Join(t.TempDir(), "outside")
	os.Symlink(outside, filepath.Join(dir, UsesFile))
	s.Log.Record(Use{Time: time.Now(), Host: "api.anthropic.com:443"})
	if _, err := os.Stat(outside); err == nil {
		t.Error("the log followed a link out of the session's directory")
	}
	if l, err := ReadUses(t.TempDir()); err != nil || len(l.Summary()) != 0 {
		t.Errorf("no log: %v %v", l.Summary(), err)
	}
}

func TestTestHook(t *testing.T) {
	t.Setenv(TestUpstreamEnv, "api.anthropic.com:443")
	set, _ := NewSet(Secret{Name: "X", Value: "v-0123456789", Placeholder: NewPlaceholder("", 40), Hosts: []string{"api.anthropic.com:443"}})
	if _, err := OpenSession(t.TempDir(), set, nil); err == nil || !strings.Contains(err.Error(), TestUpstreamEnv) {
		t.Errorf("a bad hook: %v", err)
	}
}

// What status and review show of a session's log: its lines, nothing without one, and a
// damaged log said as unknown, never an error.
func TestUsesSummary(t *testing.T) {
	if got := UsesSummary(filepath.Join(t.TempDir(), "no-session")); got != nil {
		t.Errorf("no session directory: %q", got)
	}
	if got := UsesSummary(t.TempDir()); got != nil {
		t.Errorf("no log: %q", got)
	}
	dir := t.TempDir()
	f := &FileLog{Dir: dir}
	for range 3 {
		f.Record(Use{Time: time.Now(), Host: "api.anthropic.com:443", Secrets: []string{"ANTHROPIC_API_KEY"}})
	}
	f.Record(Use{Time: time.Now(), Host: "api.openai.com:443", Secrets: []string{"OPENAI_API_KEY"}})
	f.Record(Use{Time: time.Now(), Host: "api.anthropic.com:443"}) // no secret: not a use
	want := "ANTHROPIC_API_KEY used 3 times, only with api.anthropic.com\nOPENAI_API_KEY used 1 time, only with api.openai.com"
	if got := strings.Join(UsesSummary(dir), "\n"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A log that is a link out of the directory is not followed: unknown, with the reason.
	damaged := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, UsesFile), filepath.Join(damaged, UsesFile)); err != nil {
		t.Fatal(err)
	}
	got := UsesSummary(damaged)
	if len(got) != 1 || !strings.HasPrefix(got[0], "unknown (") || !strings.HasSuffix(got[0], ")") || !strings.Contains(got[0], UsesFile) {
		t.Errorf("a damaged log: %q", got)
	}
	// A session directory that is a file: unknown too.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := UsesSummary(file); len(got) != 1 || !strings.HasPrefix(got[0], "unknown (") {
		t.Errorf("a session directory that is a file: %q", got)
	}
}

// A line longer than any use (a damaged log) is skipped whole: the uses after it still count.
func TestReadUsesSkipsAnOverlongLine(t *testing.T) {
	dir := t.TempDir()
	f := &FileLog{Dir: dir}
	f.Record(Use{Time: time.Now(), Host: "api.anthropic.com:443", Secrets: []string{"ANTHROPIC_API_KEY"}})
	long := append([]byte(`{"host":"`+strings.Repeat("x", 200<<10)+`"}`), '\n')
	file, err := os.OpenFile(filepath.Join(dir, UsesFile), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.Write(long); err != nil {
		t.Fatal(err)
	}
	file.Close()
	f.Record(Use{Time: time.Now(), Host: "api.anthropic.com:443", Secrets: []string{"ANTHROPIC_API_KEY"}})
	want := "ANTHROPIC_API_KEY used 2 times, only with api.anthropic.com"
	if got := strings.Join(UsesSummary(dir), "\n"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Two processes of one session (serve and shell, a restart) get the same placeholders and CA,
// even when they open at once; a name only one asked for keeps its own; the file holds no value.
func TestSessionSharesPlaceholders(t *testing.T) {
	dir := t.TempDir()
	const value, ghValue = "sk-ant-api03-value-0123456789", "ghp_the-gh-value-0123456789"
	newSet := func(withGitHub bool) *Set {
		secs := []Secret{{Name: "ANTHROPIC_API_KEY", Value: value, Placeholder: NewPlaceholder("sk-ant-api03-", 108), Hosts: []string{"api.anthropic.com:443"}}}
		if withGitHub {
			secs = append(secs, Secret{Name: "GITHUB_TOKEN", Value: ghValue, Placeholder: NewPlaceholder("ghp_", 40), Hosts: []string{"api.github.com:443"}})
		}
		set, err := NewSet(secs...)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	const n = 4
	opened := make([]*Session, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			s, err := OpenSession(dir, newSet(false), nil)
			opened[i] = s
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	first := opened[0].Setup()
	for i, s := range opened[1:] {
		if got := s.Setup(); strings.Join(got.Env, " ") != strings.Join(first.Env, " ") || got.CAPEM != first.CAPEM {
			t.Errorf("open %d at once: env %v, want %v (same CA: %v)", i+1, got.Env, first.Env, got.CAPEM == first.CAPEM)
		}
	}
	// A later process that asks for one more: the first's placeholder again, a new one for
	// the other name, kept for the next process.
	wider, err := OpenSession(dir, newSet(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := wider.Setup().Env; got[0] != first.Env[0] || !strings.HasPrefix(got[1], "GITHUB_TOKEN=ghp_"+PlaceholderMark) {
		t.Errorf("the wider set: %v, want %s and a GitHub placeholder", got, first.Env[0])
	}
	again, err := OpenSession(dir, newSet(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(again.Setup().Env, " ") != strings.Join(wider.Setup().Env, " ") {
		t.Errorf("a restart: %v, want %v", again.Setup().Env, wider.Setup().Env)
	}
	narrow, err := OpenSession(dir, newSet(false), nil)
	if err != nil || strings.Join(narrow.Setup().Env, " ") != first.Env[0] {
		t.Errorf("the narrower set again: %v, %v", narrow.Setup().Env, err)
	}
	path := filepath.Join(dir, PlaceholdersFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "value-0123456789") {
		t.Fatal("the placeholders file holds a value")
	}
	if !strings.Contains(string(data), "GITHUB_TOKEN") {
		t.Errorf("a name the last process did not ask for was dropped: %s", data)
	}
	if st, _ := os.Lstat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("placeholders file mode %v", st.Mode().Perm())
	}

	// A placeholder of the wrong form (another prefix, characters the guest refuses, the value
	// itself): a new one for that name, written back.
	for _, bad := range []string{"sk-" + PlaceholderMark + "abcdefghijklmnopqrstuvwxyz", "sk-ant-api03-" + PlaceholderMark + "abc$efghijklmnopqrstuvwxyz", "sk-ant-api03-" + PlaceholderMark + "short", value} {
		os.WriteFile(path, []byte(`{"placeholders":{"ANTHROPIC_API_KEY":"`+bad+`"}}`), 0o600)
		s, err := OpenSession(dir, newSet(false), nil)
		if err != nil {
			t.Fatalf("%q: %v", bad, err)
		}
		got := s.Setup().Env[0]
		if strings.Contains(got, bad) || !strings.HasPrefix(got, "ANTHROPIC_API_KEY=sk-ant-api03-"+PlaceholderMark) {
			t.Errorf("%q kept: %s", bad, got)
		}
		if setup := s.Setup(); setup.Check() != nil {
			t.Error(setup.Check())
		}
		if data, _ := os.ReadFile(path); !strings.Contains(string(data), strings.TrimPrefix(got, "ANTHROPIC_API_KEY=")) {
			t.Errorf("%q: the new placeholder was not kept: %s", bad, data)
		}
	}
	// A damaged file, one others may read, a link: an error that says what to remove, no value.
	outside := filepath.Join(t.TempDir(), "elsewhere.json")
	os.WriteFile(outside, []byte(`{"placeholders":{}}`), 0o600)
	for name, damage := range map[string]func(){
		"not JSON":  func() { os.WriteFile(path, []byte("{not json"), 0o600) },
		"mode 0644": func() { os.WriteFile(path, []byte(`{"placeholders":{}}`), 0o600); os.Chmod(path, 0o644) },
		"a link":    func() { os.Symlink(outside, path) },
		"a dir":     func() { os.Mkdir(path, 0o700) },
		"too large": func() { os.WriteFile(path, make([]byte, 65<<10), 0o600) },
	} {
		os.RemoveAll(path)
		damage()
		_, err := OpenSession(dir, newSet(false), nil)
		if err == nil || !strings.Contains(err.Error(), "remove") || strings.Contains(err.Error(), "value-0123456789") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if data, _ := os.ReadFile(outside); string(data) != `{"placeholders":{}}` {
		t.Errorf("a link was followed: %s", data)
	}
}
