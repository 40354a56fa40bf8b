package netpolicy

import (
	"slices"
	"strings"
	"testing"
)

// Every preset's hosts are valid policy entries, names are unique, includes resolve, and each
// preset stands for at least one host.
func TestPresetTable(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range presetTable {
		if seen[d.Name] {
			t.Errorf("preset @%s listed twice", d.Name)
		}
		seen[d.Name] = true
		if d.Name != strings.ToLower(d.Name) || d.Summary == "" {
			t.Errorf("preset @%s: a lower-case name and a summary", d.Name)
		}
		for _, h := range d.Hosts {
			if e, err := normalizeEntry(h); err != nil || e != h || strings.HasPrefix(h, "@") {
				t.Errorf("preset @%s: host %q is not a canonical host entry (%v)", d.Name, h, err)
			}
		}
		hosts, ok := presetHosts(d.Name)
		if !ok || len(hosts) == 0 {
			t.Errorf("preset @%s stands for no host", d.Name)
		}
	}
	if len(Presets()) != len(presetTable) {
		t.Errorf("Presets() lists %d, the table %d", len(Presets()), len(presetTable))
	}
}

func TestParsePresets(t *testing.T) {
	p, err := Parse("allow:@GO,example.com,@npm,*.example.org,proxy.golang.org,@go")
	if err != nil {
		t.Fatal(err)
	}
	// The person's spelling stays (lower-cased, deduplicated): status shows what they wrote.
	if got, want := p.String(), "allow:@go,example.com,@npm,*.example.org,proxy.golang.org"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if again, err := Parse(p.String()); err != nil || again.String() != p.String() {
		t.Errorf("Parse(String()) = %v, %v", again, err)
	}
	wantHosts := []string{"proxy.golang.org", "sum.golang.org", "storage.googleapis.com", "example.com",
		"registry.npmjs.org", "registry.yarnpkg.com", "repo.yarnpkg.com", "*.example.org"}
	if !slices.Equal(p.Hosts(), wantHosts) {
		t.Errorf("Hosts() = %q, want %q", p.Hosts(), wantHosts)
	}
	x := p.Expanded()
	if got := x.String(); got != "allow:"+strings.Join(wantHosts, ",") {
		t.Errorf("Expanded().String() = %q", got)
	}
	if x.HasPresets() || !p.HasPresets() {
		t.Errorf("HasPresets: policy %v, expanded %v", p.HasPresets(), x.HasPresets())
	}
	// What the guest is given parses to the same decisions.
	guest, err := Parse(x.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"proxy.golang.org", "SUM.golang.org.", "registry.npmjs.org", "example.com",
		"a.example.org", "pypi.org", "github.com", "golang.org", "example.org", "evil.example"} {
		if p.Allows(host) != guest.Allows(host) {
			t.Errorf("%s: the policy says %v, its expansion %v", host, p.Allows(host), guest.Allows(host))
		}
	}
	for host, want := range map[string]bool{"proxy.golang.org": true, "storage.googleapis.com": true,
		"registry.yarnpkg.com": true, "pypi.org": false, "github.com": false, "golang.org": false} {
		if p.Allows(host) != want {
			t.Errorf("Allows(%q) = %v, want %v", host, !want, want)
		}
	}
}

func TestCompositePresets(t *testing.T) {
	dev, _ := Parse("allow:@dev")
	for _, host := range []string{"proxy.golang.org", "registry.npmjs.org", "files.pythonhosted.org", "static.crates.io",
		"index.rubygems.org", "repo1.maven.org"} {
		if !dev.Allows(host) {
			t.Errorf("@dev does not allow %s", host)
		}
	}
	// The registries, not the VCS hosts nor the distribution mirrors.
	for _, host := range []string{"github.com", "codeload.github.com", "deb.debian.org", "api.anthropic.com"} {
		if dev.Allows(host) {
			t.Errorf("@dev allows %s", host)
		}
	}
	agents, _ := Parse("allow:@agents")
	for _, host := range []string{"api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com"} {
		if !agents.Allows(host) {
			t.Errorf("@agents does not allow %s", host)
		}
	}
	apt, _ := Parse("allow:@apt")
	if !apt.Allows("us.archive.ubuntu.com") || apt.Allows("evil.ubuntu.com") {
		t.Errorf("@apt: a country mirror allowed %v, another ubuntu.com name %v", apt.Allows("us.archive.ubuntu.com"), apt.Allows("evil.ubuntu.com"))
	}
}

func TestParseRefusesUnknownPresets(t *testing.T) {
	for _, tc := range []struct{ spec, wantInErr string }{
		{"allow:@golang", `"@golang" is not a preset (did you mean @go?)`},
		{"allow:@nope,example.com", `"@nope" is not a preset: the presets are @go, @npm, @npm-read, @pypi`},
		{"allow:@", `"@" is not a preset: the presets are`},
		{"allow:@@go", `"@@go" is not a preset`},
		{"allow:@go.", `"@go." is not a preset`},
		{"allow:*.@go", "not allowed in a host name"},
		{"allow:example.com,@pip", "network presets lists their hosts"},
		{"@go", "a network policy is open, none, or allow:"},
	} {
		_, err := Parse(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.wantInErr) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.spec, err, tc.wantInErr)
		}
	}
}
