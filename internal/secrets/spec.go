// Package secrets keeps a person's API keys and tokens on the host: the guest holds a
// placeholder, and a relay on the host swaps it for the real value in requests to the hosts
// the secret is bound to (docs/secrets.md).
//
// This package is the host-side core: parsing --secret, reading the values, placeholders, the
// per-session CA and the injecting relay. It is not wired into the commands or the guest's
// proxy yet.
package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// Known is one row of the table of secrets the relay knows without a binding.
type Known struct {
	// Name is the environment variable the agent reads.
	Name string
	// Hosts are the hosts that may receive the value (port 443).
	Hosts []string
	// Prefix is what the placeholder starts with, for clients that check a key's format.
	Prefix string
	// Length is the placeholder's length (at least MinPlaceholderLength).
	Length int
}

// KnownSecrets is the table of default bindings (docs/secrets.md shows it). A name here needs
// no @host; a name not here needs one.
var KnownSecrets = []Known{
	// Anthropic: Claude Code sends ANTHROPIC_API_KEY as x-api-key, ANTHROPIC_AUTH_TOKEN and
	// CLAUDE_CODE_OAUTH_TOKEN as Authorization: Bearer. Keys look like sk-ant-api03-…(108).
	{Name: "ANTHROPIC_API_KEY", Hosts: []string{"api.anthropic.com"}, Prefix: "sk-ant-api03-", Length: 108},
	{Name: "ANTHROPIC_AUTH_TOKEN", Hosts: []string{"api.anthropic.com"}, Prefix: "sk-ant-", Length: 108},
	{Name: "CLAUDE_CODE_OAUTH_TOKEN", Hosts: []string{"api.anthropic.com"}, Prefix: "sk-ant-oat01-", Length: 108},
	// OpenAI: Authorization: Bearer sk-proj-…. `codex exec` reads its key from CODEX_API_KEY
	// (OPENAI_API_KEY is what `codex login --with-api-key` takes), and also sends it to
	// chatgpt.com (its model list), which is not bound: that request gets the placeholder.
	{Name: "OPENAI_API_KEY", Hosts: []string{"api.openai.com"}, Prefix: "sk-proj-", Length: 164},
	{Name: "CODEX_API_KEY", Hosts: []string{"api.openai.com"}, Prefix: "sk-proj-", Length: 164},
	// Gemini / Google AI Studio: x-goog-api-key or ?key=; keys are AIza + 35 characters.
	{Name: "GEMINI_API_KEY", Hosts: []string{"generativelanguage.googleapis.com"}, Prefix: "AIza", Length: 39},
	{Name: "GOOGLE_API_KEY", Hosts: []string{"generativelanguage.googleapis.com"}, Prefix: "AIza", Length: 39},
	// Other providers the agents speak to (the --agent-env list).
	{Name: "OPENROUTER_API_KEY", Hosts: []string{"openrouter.ai"}, Prefix: "sk-or-v1-", Length: 73},
	{Name: "GROQ_API_KEY", Hosts: []string{"api.groq.com"}, Prefix: "gsk_", Length: 56},
	{Name: "MISTRAL_API_KEY", Hosts: []string{"api.mistral.ai"}, Prefix: "", Length: 32},
	{Name: "DEEPSEEK_API_KEY", Hosts: []string{"api.deepseek.com"}, Prefix: "sk-", Length: 35},
	{Name: "XAI_API_KEY", Hosts: []string{"api.x.ai"}, Prefix: "xai-", Length: 84},
	// GitHub: the API (Bearer/token) and git over HTTPS (Basic, the token as password).
	{Name: "GITHUB_TOKEN", Hosts: githubHosts, Prefix: "ghp_", Length: 40},
	{Name: "GH_TOKEN", Hosts: githubHosts, Prefix: "ghp_", Length: 40},
	// npm: Authorization: Bearer npm_….
	{Name: "NPM_TOKEN", Hosts: []string{"registry.npmjs.org"}, Prefix: "npm_", Length: 40},
	// PyPI: twine sends Basic __token__:pypi-….
	{Name: "PYPI_API_TOKEN", Hosts: []string{"upload.pypi.org"}, Prefix: "pypi-", Length: 180},
	{Name: "TWINE_PASSWORD", Hosts: []string{"upload.pypi.org"}, Prefix: "pypi-", Length: 180},
	// Hugging Face: Authorization: Bearer hf_….
	{Name: "HF_TOKEN", Hosts: []string{"huggingface.co"}, Prefix: "hf_", Length: 37},
}

var githubHosts = []string{"github.com", "api.github.com", "codeload.github.com", "uploads.github.com",
	"raw.githubusercontent.com", "objects.githubusercontent.com"}

// AgentSecretNames are the names --agent-secrets takes when they are set on the host: the
// secret ones of the --agent-env list (shellcmd.AgentEnvNames); its other names (base URLs,
// models, projects) are not secrets and stay plain environment.
var AgentSecretNames = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
	"OPENAI_API_KEY", "CODEX_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
	"OPENROUTER_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY",
}

func known(name string) (Known, bool) {
	for _, k := range KnownSecrets {
		if k.Name == name {
			return k, true
		}
	}
	return Known{}, false
}

// Source kinds of a Spec.
const (
	FromEnv  = "env"
	FromCmd  = "cmd"
	FromFile = "file"
)

// Spec is one parsed --secret: where the value comes from and where it may go. It holds no
// value.
type Spec struct {
	Name string
	// Kind is FromEnv, FromCmd or FromFile; Arg the variable, the command, or the path.
	Kind, Arg string
	// Hosts are host or host:port (port 443 when none), lower case, sorted.
	Hosts []string
	// Flag is the text given, for errors (it holds no value: values never come on the command
	// line).
	Flag string
}

// ParseSpec parses one --secret: NAME, NAME=env:OTHER, NAME=cmd:COMMAND, NAME=file:PATH, each
// optionally NAME@host1,host2 (NAME@api.example.com=cmd:…). A name outside KnownSecrets needs
// an @host binding.
func ParseSpec(s string) (Spec, error) {
	left, source, hasSource := strings.Cut(s, "=")
	name, hostList, hasHosts := strings.Cut(left, "@")
	sp := Spec{Name: name, Kind: FromEnv, Arg: name, Flag: s}
	if !shellquote.IsName(name) {
		return Spec{}, fmt.Errorf("--secret %q: %q is not a variable name (NAME[@HOST,...][=env:VAR|=cmd:COMMAND|=file:PATH])", s, name)
	}
	if hasSource {
		kind, arg, ok := strings.Cut(source, ":")
		switch {
		case !ok:
			return Spec{}, fmt.Errorf("--secret %s: the value is never given on the command line; read it from env:VAR, cmd:COMMAND or file:PATH (--secret %s=env:VAR)", name, left)
		case kind == FromEnv:
			if !shellquote.IsName(arg) {
				return Spec{}, fmt.Errorf("--secret %s=env:%s: %q is not a variable name", name, arg, arg)
			}
		case kind == FromCmd, kind == FromFile:
			if strings.TrimSpace(arg) == "" {
				return Spec{}, fmt.Errorf("--secret %s=%s: empty %s", name, kind, map[string]string{FromCmd: "command", FromFile: "path"}[kind])
			}
		default:
			return Spec{}, fmt.Errorf("--secret %s: unknown source %q: use env:VAR, cmd:COMMAND or file:PATH", name, kind+":")
		}
		sp.Kind, sp.Arg = kind, arg
	}
	if hasHosts {
		for _, h := range strings.Split(hostList, ",") {
			hp, err := normalizeHost(h)
			if err != nil {
				return Spec{}, fmt.Errorf("--secret %s@%s: %w", name, hostList, err)
			}
			if !slices.Contains(sp.Hosts, hp) {
				sp.Hosts = append(sp.Hosts, hp)
			}
		}
	} else if k, ok := known(name); ok {
		for _, h := range k.Hosts {
			sp.Hosts = append(sp.Hosts, h+":443")
		}
	} else {
		fix := name + "@HOST[,HOST...]"
		if hasSource {
			fix += "=" + source
		}
		return Spec{}, fmt.Errorf("--secret %s: no known host for %s; say which hosts may receive it: --secret %s", name, name, fix)
	}
	slices.Sort(sp.Hosts)
	return sp, nil
}

// normalizeHost checks one bound host (a DNS name, optional :port) and returns host:port.
func normalizeHost(h string) (string, error) {
	host, port := strings.ToLower(strings.TrimSpace(h)), "443"
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host, port = host[:i], host[i+1:]
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return "", fmt.Errorf("%q: bad port %q", h, port)
		}
	}
	if !isDNSName(host) {
		return "", fmt.Errorf("%q: not a host name (a DNS name such as api.example.com; no IP address, no wildcard)", h)
	}
	return host + ":" + port, nil
}

// isDNSName says whether s is a DNS name with at least one dot, made of letters, digits and
// hyphens (no IP address, no wildcard, no trailing dot).
func isDNSName(s string) bool {
	if len(s) == 0 || len(s) > 253 || !strings.Contains(s, ".") || net.ParseIP(s) != nil {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	// An all-numeric last label is an address, not a name.
	last := s[strings.LastIndexByte(s, '.')+1:]
	if _, err := strconv.Atoi(last); err == nil {
		return false
	}
	return true
}

// ParseSpecs parses every --secret and, with agentSecrets (--agent-secrets), adds each
// AgentSecretNames that lookup finds on the host and no --secret named. Two --secret of one
// name are an error.
func ParseSpecs(flags []string, agentSecrets bool, lookup func(string) (string, bool)) ([]Spec, error) {
	var specs []Spec
	seen := map[string]bool{}
	for _, f := range flags {
		sp, err := ParseSpec(f)
		if err != nil {
			return nil, err
		}
		if seen[sp.Name] {
			return nil, fmt.Errorf("--secret %s given twice", sp.Name)
		}
		seen[sp.Name] = true
		specs = append(specs, sp)
	}
	if agentSecrets {
		for _, name := range AgentSecretNames {
			if _, ok := lookup(name); ok && !seen[name] {
				sp, err := ParseSpec(name)
				if err != nil {
					return nil, err
				}
				seen[name] = true
				specs = append(specs, sp)
			}
		}
	}
	return specs, nil
}

// Limits on reading a value.
const (
	// MaxValueBytes caps a value (a file, a command's stdout).
	MaxValueBytes = 64 << 10
	// maxStderrBytes caps what of a failing command's stderr goes into its error.
	maxStderrBytes = 2 << 10
	// DefaultCmdTimeout bounds a cmd: source (a keychain prompt needs some time).
	DefaultCmdTimeout = 60 * time.Second
)

// Reader reads the values of specs on the host.
type Reader struct {
	// LookupEnv reads the host's environment (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// CmdTimeout bounds a cmd: source (default DefaultCmdTimeout).
	CmdTimeout time.Duration
	// Shell runs a cmd: source as Shell -c COMMAND (default /bin/sh).
	Shell string
}

// Read reads the value of sp. The error never holds the value.
func (r *Reader) Read(ctx context.Context, sp Spec) (string, error) {
	var raw []byte
	switch sp.Kind {
	case FromEnv:
		lookup := r.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		v, ok := lookup(sp.Arg)
		if !ok {
			if sp.Arg == sp.Name {
				return "", fmt.Errorf("--secret %s: %s is not set on the host; set it, or read it from elsewhere: --secret %s=cmd:COMMAND or =file:PATH", sp.Name, sp.Name, sp.Name)
			}
			return "", fmt.Errorf("--secret %s=env:%s: %s is not set on the host", sp.Name, sp.Arg, sp.Arg)
		}
		raw = []byte(v)
	case FromFile:
		b, err := readCapped(sp.Arg)
		if err != nil {
			return "", fmt.Errorf("--secret %s=file:%s: %w", sp.Name, sp.Arg, err)
		}
		raw = b
	case FromCmd:
		b, err := r.runCmd(ctx, sp)
		if err != nil {
			return "", err
		}
		raw = b
	default:
		return "", fmt.Errorf("--secret %s: unknown source %q", sp.Name, sp.Kind)
	}
	v := strings.TrimSpace(string(raw))
	if err := checkValue(v); err != nil {
		return "", fmt.Errorf("--secret %s (%s): %w", sp.Name, sp.Kind, err)
	}
	return v, nil
}

// checkValue refuses a value that cannot go into a header as is: empty, or holding a control
// character (a CR or LF would split the request the relay writes).
func checkValue(v string) error {
	if v == "" {
		return errors.New("the value is empty")
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("the value holds a control character (byte %d); a key or token is one line of printable text", i)
		}
	}
	return nil
}

func readCapped(path string) ([]byte, error) {
	b, err := readRegular(path, MaxValueBytes)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("larger than %d bytes: not a key", MaxValueBytes)
	}
	return b, err
}

// errTooLarge is readRegular's answer for a file over its cap.
var errTooLarge = errors.New("too large")

// readRegular reads the regular file at path, at most max bytes (errTooLarge past them).
func readRegular(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, errTooLarge
	}
	return b, nil
}

// cappedBuffer keeps the first max bytes written and counts the rest.
type cappedBuffer struct {
	buf    bytes.Buffer
	max    int
	over   bool
	onOver func()
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		if !c.over && c.onOver != nil {
			c.onOver()
		}
		c.over = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (r *Reader) runCmd(ctx context.Context, sp Spec) ([]byte, error) {
	timeout := r.CmdTimeout
	if timeout <= 0 {
		timeout = DefaultCmdTimeout
	}
	shell := r.Shell
	if shell == "" {
		shell = "/bin/sh"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, "-c", sp.Arg)
	cmd.WaitDelay = 2 * time.Second
	// More than a key's worth of output ends the command at once.
	stdout := &cappedBuffer{max: MaxValueBytes, onOver: cancel}
	stderr := &cappedBuffer{max: maxStderrBytes}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, stdout, stderr
	err := cmd.Run()
	// stderr goes into the error; it might echo the value, so any line of stdout is taken out.
	msg := strings.TrimSpace(stderr.buf.String())
	if out := strings.TrimSpace(stdout.buf.String()); out != "" {
		msg = strings.ReplaceAll(msg, out, "[value]")
	}
	if msg != "" {
		msg = "; its stderr: " + msg
	}
	switch {
	case stdout.over:
		return nil, fmt.Errorf("--secret %s=cmd:%s: printed more than %d bytes: not a key", sp.Name, sp.Arg, MaxValueBytes)
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("--secret %s=cmd:%s: still running after %s; ended%s", sp.Name, sp.Arg, timeout, msg)
	case err != nil:
		return nil, fmt.Errorf("--secret %s=cmd:%s: %v%s", sp.Name, sp.Arg, err, msg)
	}
	return stdout.buf.Bytes(), nil
}
