package secrets

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// A session's secrets on the host, wired (docs/secrets.md): the Set, the session CA kept in the
// session's host state directory, the Relay that the guest's proxy reaches through the
// session's own SSH connection, and the log of uses kept in that directory for status and
// review.

const (
	// UsesFile is the log of uses in the session's host state directory: one Use per line
	// (JSON), never a value; UsesFile+".1" holds the one before when it reached MaxUsesFile.
	UsesFile = "secrets-uses.jsonl"
	// MaxUsesFile caps the log file (then it is rotated once).
	MaxUsesFile = 1 << 20
)

// Session is a session's secrets on the host.
type Session struct {
	Set   *Set
	CA    *CA
	Relay *Relay
	Log   *FileLog
	// relayName names this process's relay socket in the guest (netpolicy.SecretsSetup.Relay):
	// each process of a session listens at its own.
	relayName string
}

// OpenSession opens (or makes) the session CA in dir, the session's host state directory,
// for set's bound hosts and ruleTargets (host:port that method and path rules only name,
// whose HTTPS the relay reads: netpolicy.Policy.RuleTargets), and the relay with its log
// there. set may be nil or empty when there are rule targets (no secret then). set's placeholders become the
// session's (PlaceholdersFile: those another process of the session made for the same names,
// kept for the next one otherwise). Both under the session's secrets lock, so that two
// processes opening at once agree on the placeholders and the CA.
func OpenSession(dir string, set *Set, ruleTargets []string) (*Session, error) {
	if set == nil {
		set = &Set{}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	defer root.Close()
	unlock, err := lockSecrets(root, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := set.sharePlaceholders(root, dir); err != nil {
		return nil, err
	}
	ca, err := OpenCA(dir, append(set.Hosts(), ruleTargets...))
	if err != nil {
		return nil, err
	}
	flog := &FileLog{Dir: dir}
	relay := &Relay{Set: set, CA: ca, Recorder: flog, RuleTargets: slices.Clone(ruleTargets), HoldDir: dir}
	if err := applyTestHook(relay); err != nil {
		return nil, err
	}
	return &Session{Set: set, CA: ca, Relay: relay, Log: flog, relayName: newRelayName()}, nil
}

// newRelayName is 16 random lower-case hex digits (netpolicy.CheckRelayName).
func newRelayName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Setup is what the guest is given: bound hosts, the CA's certificate, the placeholders.
func (s *Session) Setup() netpolicy.SecretsSetup {
	return netpolicy.SecretsSetup{Hosts: s.Set.Hosts(), RuleTargets: slices.Clone(s.Relay.RuleTargets), CAPEM: string(s.CA.CertPEM()), Env: s.Set.Env(), Relay: s.relayName}
}

// BoundNames are the bound hosts' names (no port): what an allowlist must hold.
func (s *Session) BoundNames() []string { return s.Set.BoundNames() }

// Serve is Relay.Serve (for guest.AgentSecrets).
func (s *Session) Serve(ctx context.Context, c net.Conn, target string) error {
	return s.Relay.Serve(ctx, c, target)
}

// Held is Relay.Held (for guest.AgentSecrets).
func (s *Session) Held() []netpolicy.HeldConn { return s.Relay.Held() }

// ServeRuled is Relay.ServeRuled (for guest.AgentSecrets).
func (s *Session) ServeRuled(ctx context.Context, c net.Conn, target string, rules []string, command string) error {
	return s.Relay.ServeRuled(ctx, c, target, rules, command)
}

// FileLog is a Recorder that keeps the uses in memory (Log) and appends each to the session's
// UsesFile. A write that fails is given up (the relay does not wait on the disk for long).
type FileLog struct {
	Dir string
	Log Log

	mu sync.Mutex
}

// Record keeps u and appends it to the file.
func (f *FileLog) Record(u Use) {
	f.Log.Record(u)
	line, err := json.Marshal(u)
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	root, err := os.OpenRoot(f.Dir)
	if err != nil {
		return
	}
	defer root.Close()
	if st, err := root.Lstat(UsesFile); err == nil && st.Size()+int64(len(line)) >= MaxUsesFile {
		_ = root.Rename(UsesFile, UsesFile+".1")
	}
	file, err := root.OpenFile(UsesFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer file.Close()
	_, _ = file.Write(append(line, '\n'))
}

// UsesSummary is what status and review show of the log of uses kept in a session's host
// state directory dir: its Log.Summary lines ("ANTHROPIC_API_KEY used 212 times, only with
// api.anthropic.com"), none when the session never used a secret, and one "unknown (…)" line
// when the log cannot be read (a damaged log never fails the command that shows it).
func UsesSummary(dir string) []string {
	uses, _ := Summaries(dir)
	return uses
}

// Summaries are UsesSummary's lines and the requests the network rules ruled on
// (Log.RequestsSummary: none when the log cannot be read, which the uses' line says), from one
// read of the log kept in dir: what status and review show.
func Summaries(dir string) (uses, requests []string) {
	log, err := ReadUses(dir)
	if err != nil {
		return []string{"unknown (" + err.Error() + ")"}, nil
	}
	return log.Summary(), log.RequestsSummary()
}

// ReadUses reads the log of uses kept in dir (the rotated file first) into a Log; none is an
// empty Log. Lines that are not a Use are skipped.
func ReadUses(dir string) (*Log, error) {
	l := &Log{Max: 1}
	if err := eachUse(dir, l.Record); err != nil {
		return nil, err
	}
	return l, nil
}

// MaxRefusedRequests is how many of the last refused requests RefusedRequests returns.
const MaxRefusedRequests = 1000

// RefusedRequests are the last requests (MaxRefusedRequests) that the relay refused under the
// network rules, from the log of uses kept in dir, oldest first: what `watch` shows beside
// the guest's refusals.
func RefusedRequests(dir string) ([]Use, error) {
	var out []Use
	err := eachUse(dir, func(u Use) {
		if u.Rules && u.Refused {
			if len(out) == MaxRefusedRequests {
				out = slices.Delete(out, 0, 1)
			}
			out = append(out, u)
		}
	})
	return out, err
}

// eachUse calls f with each Use of the log kept in dir, the rotated file first; none when
// there is no log. Lines that are not a Use are skipped.
func eachUse(dir string, f func(Use)) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer root.Close()
	for _, name := range []string{UsesFile + ".1", UsesFile} {
		file, err := root.Open(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = readUseLines(io.LimitReader(file, MaxUsesFile+64<<10), f)
		file.Close()
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
	}
	return nil
}

// maxUseLine bounds one line of the log of uses; a longer one is no Use and is skipped.
const maxUseLine = 64 << 10

// readUseLines records into l every line of r that is a Use, skipping longer lines than
// maxUseLine whole (a bufio.Scanner would stop at the first, and the counts would come out low
// without a word).
func readUseLines(r io.Reader, f func(Use)) error {
	br := bufio.NewReaderSize(r, maxUseLine)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
		} else if len(line) > 0 {
			var u Use
			if json.Unmarshal(line, &u) == nil && u.Host != "" {
				f(u)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// The test hook (e2e only: there is no internet where the tests run). When set, the relay
// dials the address given for a bound host:port instead of the host's name, and trusts the
// extra CA besides the host's roots. It only redirects where the relay connects for a bound
// host; what it checks (the bound set, the provider's certificate for the host's name) is the
// same.
const (
	// TestUpstreamEnv is HOST:PORT=ADDR[,HOST:PORT=ADDR...].
	TestUpstreamEnv = "LIMACTL_MCP_SECRETS_TEST_UPSTREAM"
	// TestCAEnv is the path of a PEM certificate the relay trusts besides the host's roots.
	TestCAEnv = "LIMACTL_MCP_SECRETS_TEST_CA"
)

func applyTestHook(r *Relay) error {
	if spec := os.Getenv(TestUpstreamEnv); spec != "" {
		addrs := map[string]string{}
		for _, kv := range strings.Split(spec, ",") {
			target, addr, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("%s: %q is not HOST:PORT=ADDR", TestUpstreamEnv, kv)
			}
			addrs[strings.ToLower(target)] = addr
		}
		var d net.Dialer
		r.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if to, ok := addrs[strings.ToLower(addr)]; ok {
				addr = to
			}
			return d.DialContext(ctx, network, addr)
		}
	}
	if path := os.Getenv(TestCAEnv); path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%s: %w", TestCAEnv, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s: %s holds no certificate", TestCAEnv, path)
		}
		r.RootCAs = pool
	}
	return nil
}
