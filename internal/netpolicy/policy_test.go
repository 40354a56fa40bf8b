package netpolicy

import (
	"strings"
	"testing"
)

func TestParseAndString(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"open", "open"},
		{"none", "none"},
		{"allow:proxy.golang.org", "allow:proxy.golang.org"},
		{"allow:Proxy.Golang.ORG.,registry.npmjs.org,*.pypi.org", "allow:proxy.golang.org,registry.npmjs.org,*.pypi.org"},
		{"allow:a.example,A.EXAMPLE,a.example.", "allow:a.example"},
		{"allow:10.0.0.1,[::1],::ffff:1.2.3.4,2001:DB8::1", "allow:10.0.0.1,::1,1.2.3.4,2001:db8::1"},
		{"allow:localhost,my_host.internal", "allow:localhost,my_host.internal"},
	} {
		p, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		if p.String() != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.spec, p.String(), tc.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ spec, wantInErr string }{
		{"", "empty network policy"},
		{"allow", "a network policy is open, none, or allow:"},
		{"Allow:x.org", "a network policy is open, none, or allow:"},
		{"allow:", "lists no host"},
		{"allow:a.org,,b.org", "empty name"},
		{"allow:a.org,", "empty name"},
		{"allow:a.org, b.org", "no spaces"},
		{"allow:a.org:443", "ports are not part of a policy"},
		{"allow:https://a.org", "not a URL"},
		{"allow:a..org", "empty label"},
		{"allow:-a.org", "starts or ends with '-'"},
		{"allow:a*.org", "'*' is only allowed"},
		{"allow:*", "'*' is only allowed"},
		{"allow:*.", "'*' is only allowed"},
		{"allow:*..", "no host name"},
		{"allow:1.2.3", "not a valid IP address"},
		{"allow:*.10.0.0.1", "not a valid IP address"},
		{"allow:a!b.org", "not allowed in a host name"},
		{"allow:" + strings.Repeat("a", 64) + ".org", "longer than 63"},
		{"allow:fe80::1%eth0", "ports are not part"},
	} {
		_, err := Parse(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.wantInErr) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.spec, err, tc.wantInErr)
		}
	}
}

func TestAllows(t *testing.T) {
	p, err := Parse("allow:proxy.golang.org,*.pypi.org,10.0.0.1,2001:db8::1")
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"proxy.golang.org":        true,
		"PROXY.golang.org.":       true,
		"sum.golang.org":          false,
		"evilproxy.golang.org":    false,
		"proxy.golang.org.evil":   false,
		"files.pypi.org":          true,
		"a.b.pypi.org":            true,
		"pypi.org":                false, // the wildcard matches subdomains only
		"xpypi.org":               false,
		"10.0.0.1":                true,
		"10.0.0.2":                false,
		"[2001:db8::1]":           true,
		"2001:0db8:0:0:0:0:0:1":   true,
		"::ffff:10.0.0.1":         true,
		"":                        false,
		"*.pypi.org":              false,
		"files.pypi.org:443":      false,
		"files.pypi.org\x00.evil": false,
	} {
		if got := p.Allows(host); got != want {
			t.Errorf("Allows(%q) = %v, want %v", host, got, want)
		}
	}
	none, _ := Parse("none")
	open, _ := Parse("open")
	if none.Allows("localhost") || !open.Allows("anything") {
		t.Errorf("none allows, or open refuses")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"open", "none", "allow:a.org,*.b.org,1.2.3.4,[::1]", "allow:A.ORG.", "allow:,", "allow:*.*"} {
		f.Add(s, "files.b.org")
	}
	f.Fuzz(func(t *testing.T, spec, host string) {
		p, err := Parse(spec)
		if err != nil {
			return
		}
		again, err := Parse(p.String())
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", spec, p.String(), err)
		}
		if again.String() != p.String() {
			t.Fatalf("round trip of %q: %q then %q", spec, p.String(), again.String())
		}
		_ = p.Allows(host)
		for _, e := range p.Entries() {
			if !p.Allows(strings.TrimPrefix(e, "*.x")) && !strings.HasPrefix(e, "*.") {
				t.Fatalf("policy %q does not allow its own entry %q", p, e)
			}
		}
	})
}
