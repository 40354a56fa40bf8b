package secrets

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
)

// Placeholders are what the guest holds instead of a value: Prefix (so that a client that
// checks a key's format accepts it), then PlaceholderMark, then random letters and digits up
// to the key's usual length. They are random per session, so a placeholder seen in one
// session means nothing to another session's relay, and nothing to the provider.
const (
	// PlaceholderMark makes a placeholder recognisable in a log or a request dump.
	PlaceholderMark = "LMCPPLACEHOLDER"
	// MinPlaceholderLength keeps at least 128 random bits in every placeholder (62^22 > 2^130).
	MinPlaceholderLength = 22
	placeholderAlphabet  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// NewPlaceholder returns a placeholder with this prefix and (at least) this length: prefix +
// PlaceholderMark + at least MinPlaceholderLength random letters and digits. Its characters are
// safe in a header, a URL query and a Basic user:password.
func NewPlaceholder(prefix string, length int) string {
	n := max(length-len(prefix)-len(PlaceholderMark), MinPlaceholderLength)
	return prefix + PlaceholderMark + randomText(n)
}

func randomText(n int) string {
	b := make([]byte, n)
	// Rejection sampling for a uniform alphabet (crypto/rand.Read never fails since Go 1.24).
	out := make([]byte, 0, n)
	for len(out) < n {
		rand.Read(b)
		for _, c := range b {
			if c < 248 && len(out) < n { // 248 = 4*62
				out = append(out, placeholderAlphabet[int(c)%len(placeholderAlphabet)])
			}
		}
	}
	return string(out)
}

// Secret is one secret of a session: its name, its value (host memory only), the placeholder
// the guest holds, and the host:port that may receive it.
type Secret struct {
	Name        string
	Value       string
	Placeholder string
	Hosts       []string
}

// Set is a session's secrets.
type Set struct {
	secrets []Secret
	logins  []*Login
}

// WithLogins adds agents' subscription logins to s (login.go); s may be nil.
func (s *Set) WithLogins(logins ...*Login) *Set {
	if s == nil {
		s = &Set{}
	}
	s.logins = append(s.logins, logins...)
	return s
}

// Logins are s's logins.
func (s *Set) Logins() []*Login { return slices.Clone(s.logins) }

// LoginScript is the guest script's part that writes the logins' files, with placeholders
// ("": no login).
func (s *Set) LoginScript() (string, error) {
	if s == nil {
		return "", nil
	}
	return loginScript(s.logins)
}

// loginsFor are the logins that target (host:port) takes part in.
func (s *Set) loginsFor(target string) []*Login {
	var out []*Login
	for _, l := range s.logins {
		if slices.Contains(l.Kind.APIHosts, target) || l.Kind.TokenTarget == target {
			out = append(out, l)
		}
	}
	return out
}

// Resolve reads the value of every spec on the host and makes each a placeholder. The first
// error stops it (a value missing is never skipped: it was asked for).
func Resolve(ctx context.Context, r *Reader, specs []Spec) (*Set, error) {
	set := &Set{}
	for _, sp := range specs {
		v, err := r.Read(ctx, sp)
		if err != nil {
			return nil, err
		}
		prefix, length := "", 40
		if k, ok := known(sp.Name); ok {
			prefix, length = k.Prefix, k.Length
		}
		set.secrets = append(set.secrets, Secret{Name: sp.Name, Value: v, Placeholder: NewPlaceholder(prefix, length), Hosts: slices.Clone(sp.Hosts)})
	}
	return set, nil
}

// NewSet makes a Set from secrets already read (tests, or a caller that read them itself).
// Every secret needs a name, a value, a placeholder of at least MinPlaceholderLength that
// holds PlaceholderMark, and hosts.
func NewSet(secrets ...Secret) (*Set, error) {
	for _, s := range secrets {
		if err := checkValue(s.Value); err != nil {
			return nil, fmt.Errorf("secret %s: %w", s.Name, err)
		}
		if len(s.Placeholder) < MinPlaceholderLength || !strings.Contains(s.Placeholder, PlaceholderMark) || strings.Contains(s.Value, s.Placeholder) {
			return nil, fmt.Errorf("secret %s: a bad placeholder", s.Name)
		}
		if len(s.Hosts) == 0 {
			return nil, fmt.Errorf("secret %s: no host may receive it", s.Name)
		}
		for _, h := range s.Hosts {
			if _, err := normalizeHost(h); err != nil {
				return nil, fmt.Errorf("secret %s: %w", s.Name, err)
			}
		}
	}
	return &Set{secrets: slices.Clone(secrets)}, nil
}

// Env is the NAME=PLACEHOLDER list for the guest: what the agent's environment gets instead
// of the values.
func (s *Set) Env() []string {
	var env []string
	for _, sec := range s.secrets {
		env = append(env, sec.Name+"="+sec.Placeholder)
	}
	return env
}

// Hosts are every bound host:port, sorted, once each: the hosts the relay terminates TLS for,
// and what an allowlist must hold.
func (s *Set) Hosts() []string {
	var hosts []string
	for _, sec := range s.secrets {
		for _, h := range sec.Hosts {
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	for _, l := range s.logins {
		for _, h := range append(slices.Clone(l.Kind.APIHosts), l.Kind.TokenTarget) {
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	slices.Sort(hosts)
	return hosts
}

// BoundNames are the bound hosts' names (no port), sorted, once each.
func (s *Set) BoundNames() []string { return hostNames(s.Hosts()) }

// Bound says whether target (host:port) is a bound host.
func (s *Set) Bound(target string) bool {
	return slices.Contains(s.Hosts(), strings.ToLower(target))
}

// For returns the secrets bound to target (host:port).
func (s *Set) For(target string) []Secret {
	var out []Secret
	for _, sec := range s.secrets {
		if slices.Contains(sec.Hosts, strings.ToLower(target)) {
			out = append(out, sec)
		}
	}
	return out
}

// Values are the secrets' values (host memory only), for what redacts the host's records (the
// timeline): a value read by a command or from a file is in no environment variable. Nil for a
// nil Set.
func (s *Set) Values() []string {
	if s == nil {
		return nil
	}
	var values []string
	for _, sec := range s.secrets {
		values = append(values, sec.Value)
	}
	for _, l := range s.logins {
		if t, err := l.current(); err == nil {
			values = append(values, t.all()...)
		}
	}
	return values
}

// Names are the secrets' names, for status.
func (s *Set) Names() []string {
	var names []string
	for _, sec := range s.secrets {
		names = append(names, sec.Name)
	}
	for _, l := range s.logins {
		names = append(names, l.Kind.Name)
	}
	return names
}
