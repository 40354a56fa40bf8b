package secrets

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	good := []struct {
		in        string
		kind, arg string
		hosts     []string
	}{
		{"ANTHROPIC_API_KEY", FromEnv, "ANTHROPIC_API_KEY", []string{"api.anthropic.com:443"}},
		{"OPENAI_API_KEY=env:MY_OPENAI", FromEnv, "MY_OPENAI", []string{"api.openai.com:443"}},
		{"GITHUB_TOKEN=cmd:gh auth token", FromCmd, "gh auth token", nil},
		{"MY_TOKEN@API.Example.com,b.example.com:8443,api.example.com=file:/x/y", FromFile, "/x/y", []string{"api.example.com:443", "b.example.com:8443"}},
		{"GEMINI_API_KEY@other.example.org", FromEnv, "GEMINI_API_KEY", []string{"other.example.org:443"}},
	}
	for _, g := range good {
		sp, err := ParseSpec(g.in)
		if err != nil {
			t.Errorf("%q: %v", g.in, err)
			continue
		}
		if sp.Kind != g.kind || sp.Arg != g.arg {
			t.Errorf("%q: kind %q arg %q", g.in, sp.Kind, sp.Arg)
		}
		if g.hosts != nil && !slices.Equal(sp.Hosts, g.hosts) {
			t.Errorf("%q: hosts %q, want %q", g.in, sp.Hosts, g.hosts)
		}
	}
	if sp, _ := ParseSpec("GITHUB_TOKEN"); !slices.Contains(sp.Hosts, "github.com:443") || !slices.Contains(sp.Hosts, "api.github.com:443") {
		t.Errorf("GITHUB_TOKEN default hosts %q", sp.Hosts)
	}
	bad := map[string]string{
		"MY_TOKEN":                     "--secret MY_TOKEN@HOST",
		"MY_TOKEN=cmd:pass x":          "--secret MY_TOKEN@HOST[,HOST...]=cmd:pass x",
		"1BAD":                         "not a variable name",
		"ANTHROPIC_API_KEY=sk-ant-xyz": "never given on the command line",
		"ANTHROPIC_API_KEY=http:x":     "unknown source",
		"ANTHROPIC_API_KEY=env:a-b":    "not a variable name",
		"ANTHROPIC_API_KEY=cmd: ":      "empty command",
		"X@1.2.3.4":                    "not a host name",
		"X@*.example.com":              "not a host name",
		"X@localhost":                  "not a host name",
		"X@a.example.com:0":            "bad port",
		"X@a.example.com:99999":        "bad port",
		"X@":                           "not a host name",
	}
	for in, want := range bad {
		_, err := ParseSpec(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one with %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-ant-xyz") {
			t.Errorf("%q: the error holds the value: %v", in, err)
		}
	}
}

func TestParseSpecsAgentSecrets(t *testing.T) {
	env := map[string]string{"ANTHROPIC_API_KEY": "a", "GEMINI_API_KEY": "g", "ANTHROPIC_BASE_URL": "u"}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	specs, err := ParseSpecs([]string{"GEMINI_API_KEY=env:OTHER", "X@x.example.com"}, true, lookup)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name+"/"+s.Arg)
	}
	want := []string{"GEMINI_API_KEY/OTHER", "X/X", "ANTHROPIC_API_KEY/ANTHROPIC_API_KEY"}
	if !slices.Equal(names, want) {
		t.Errorf("specs %q, want %q", names, want)
	}
	if _, err := ParseSpecs([]string{"X@a.example.com", "X@b.example.com"}, false, lookup); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("twice: %v", err)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	os.WriteFile(file, []byte("  file-value\n"), 0o600)
	big := filepath.Join(dir, "big")
	secretFile := filepath.Join(dir, "secret")
	os.WriteFile(secretFile, []byte("s3cr3t\n"), 0o600)
	os.WriteFile(big, make([]byte, MaxValueBytes+1), 0o600)
	r := &Reader{LookupEnv: func(n string) (string, bool) {
		if n == "SET" {
			return "env-value", true
		}
		if n == "CRLF" {
			return "a\r\nX-Evil: 1", true
		}
		return "", false
	}, CmdTimeout: 3 * time.Second}
	ctx := context.Background()
	read := func(s string) (string, error) {
		sp, err := ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		return r.Read(ctx, sp)
	}
	for in, want := range map[string]string{
		"S@a.example.com=env:SET":                  "env-value",
		"S@a.example.com=file:" + file:             "file-value",
		"S@a.example.com=cmd:printf 'cmd-value\n'": "cmd-value",
	} {
		if v, err := read(in); err != nil || v != want {
			t.Errorf("%q: %q %v, want %q", in, v, err, want)
		}
	}
	for in, want := range map[string]string{
		"ANTHROPIC_API_KEY=env:UNSET":           "UNSET is not set on the host",
		"S@a.example.com":                       "S is not set on the host; set it, or",
		"S@a.example.com=env:CRLF":              "control character",
		"S@a.example.com=file:" + dir:           "not a regular file",
		"S@a.example.com=file:" + dir + "/none": "no such file",
		"S@a.example.com=file:" + big:           "larger than",
		"S@a.example.com=cmd:true":              "the value is empty",
		"S@a.example.com=cmd:cat " + secretFile + "; cat " + secretFile + " >&2; exit 3": "exit status 3; its stderr: [value]",
		"S@a.example.com=cmd:sleep 30": "still running after 3s",
		"S@a.example.com=cmd:yes":      "printed more than",
	} {
		start := time.Now()
		v, err := read(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %q %v, want an error with %q", in, v, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%q: the error holds the value: %v", in, err)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%q took %s", in, d)
		}
	}
}

func TestPlaceholder(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range KnownSecrets {
		p := NewPlaceholder(k.Prefix, k.Length)
		if !strings.HasPrefix(p, k.Prefix+PlaceholderMark) || len(p) < k.Length {
			t.Errorf("%s: placeholder %q (len %d, want >= %d)", k.Name, p, len(p), k.Length)
		}
		rest := strings.TrimPrefix(p, k.Prefix+PlaceholderMark)
		if len(rest) < MinPlaceholderLength || strings.Trim(rest, placeholderAlphabet) != "" {
			t.Errorf("%s: random part %q", k.Name, rest)
		}
		if seen[rest] {
			t.Errorf("placeholder repeated")
		}
		seen[rest] = true
	}
	set, err := Resolve(context.Background(), &Reader{LookupEnv: func(string) (string, bool) { return "v4lue", true }},
		[]Spec{mustSpec(t, "ANTHROPIC_API_KEY"), mustSpec(t, "GITHUB_TOKEN")})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range set.Env() {
		if strings.Contains(kv, "v4lue") || !strings.Contains(kv, PlaceholderMark) {
			t.Errorf("guest env %q", kv)
		}
	}
	if !set.Bound("api.anthropic.com:443") || !set.Bound("API.GITHUB.COM:443") || set.Bound("api.anthropic.com:80") || set.Bound("example.com:443") {
		t.Errorf("Bound: %q", set.Hosts())
	}
	if f := set.For("api.github.com:443"); len(f) != 1 || f[0].Name != "GITHUB_TOKEN" {
		t.Errorf("For: %v", f)
	}
}

func mustSpec(t *testing.T, s string) Spec {
	t.Helper()
	sp, err := ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}
