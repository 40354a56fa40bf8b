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
	s, err := OpenSession(dir, set)
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
	if _, err := OpenSession(t.TempDir(), set); err == nil || !strings.Contains(err.Error(), TestUpstreamEnv) {
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
