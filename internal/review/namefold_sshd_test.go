package review_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
)

// forceNameRule makes review see the host directory as one with rule (the probe's answer
// forced: this Linux host's filesystems tell every name apart).
func forceNameRule(t *testing.T, rule review.NameRule) {
	old := review.ProbeNameRule
	review.ProbeNameRule = func(string) review.NameRule { return rule }
	t.Cleanup(func() { review.ProbeNameRule = old })
}

func refusedWhy(cs *review.Changeset, path string) string {
	for _, it := range cs.Items {
		if it.Path == path {
			return it.Refused
		}
	}
	return "<not listed>"
}

func exists(f *fx, rel string) bool {
	_, err := os.Lstat(filepath.Join(f.host, rel))
	return err == nil
}

// On a host directory that does not tell case apart (APFS, NTFS), names that differ only in
// case are one file: two such guest names, a case-only rename, and a new name that is an
// existing host entry's are refused whole, never applied over each other; the rest applies.
func TestCaseFoldingCollisionsRefused(t *testing.T) {
	forceNameRule(t, review.NameRule{FoldCase: true, Normalize: true})
	f := newFx(t)
	f.guest("echo a > README.md && echo b > readme.md && mv main.go Main.go && mkdir -p Src/lib && echo x > Src/lib/new.go && echo ok > fine.txt")
	cs := f.build()
	for p, want := range map[string]string{
		"README.md":      "README.md and readme.md are one name on this host directory",
		"readme.md":      "README.md and readme.md are one name on this host directory",
		"main.go":        "a rename that only changes case or Unicode normalization (main.go → Main.go)",
		"Main.go":        "a rename that only changes case or Unicode normalization (main.go → Main.go)",
		"Src":            "the host has src, which this host directory does not tell apart from Src",
		"Src/lib/new.go": "",
	} {
		why := refusedWhy(cs, p)
		if want == "" {
			if why == "" {
				t.Errorf("%s (below a refused directory) is not refused", p)
			}
			continue
		}
		if !strings.Contains(why, want) {
			t.Errorf("%s: refused %q, want %q", p, why, want)
		}
	}
	if why := refusedWhy(cs, "fine.txt"); why != "" {
		t.Errorf("fine.txt refused: %s", why)
	}
	_, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	for _, p := range []string{"README.md", "readme.md", "Main.go", "Src", "src/lib/new.go"} {
		if exists(f, p) {
			t.Errorf("%s reached the host", p)
		}
	}
	if got := f.read("main.go"); got != "package main\n\nfunc main() {}\n" {
		t.Errorf("main.go on the host: %q", got)
	}
	if got := f.read("fine.txt"); got != "ok\n" {
		t.Errorf("fine.txt on the host: %q", got)
	}
	// Refused, they stay pending.
	if got := items(f.build()); !strings.Contains(got, "README.md") || !strings.Contains(got, "Main.go") {
		t.Errorf("the collisions are no longer pending: %s", got)
	}
}

// On a host directory that does not tell Unicode normalization forms apart (HFS+, APFS), an
// NFD and an NFC spelling of one name are one file.
func TestNormalizationCollisionsRefused(t *testing.T) {
	forceNameRule(t, review.NameRule{Normalize: true})
	f := newFx(t)
	f.guest(`printf x > "$(printf 'cafe\314\201.txt')" && printf y > "$(printf 'caf\303\251.txt')" && echo a > README.md && echo b > readme.md`)
	cs := f.build()
	for _, p := range []string{"cafe\u0301.txt", "caf\u00e9.txt"} {
		if why := refusedWhy(cs, p); !strings.Contains(why, "are one name on this host directory") {
			t.Errorf("%q: refused %q", p, why)
		}
	}
	// Case is told apart here: both README.md and readme.md apply.
	_, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if f.read("README.md") != "a\n" || f.read("readme.md") != "b\n" {
		t.Errorf("README.md %q, readme.md %q", f.read("README.md"), f.read("readme.md"))
	}
}

// On a host that tells every name apart (this one, as probed), nothing is refused for names.
func TestCaseSensitiveHostAppliesEveryName(t *testing.T) {
	f := newFx(t)
	if rule := review.ProbeNameRule(f.host); rule.FoldCase || rule.Normalize {
		t.Fatalf("the probe says %+v of %s, a case-sensitive Linux directory", rule, f.host)
	}
	f.guest("echo a > README.md && echo b > readme.md && mv main.go Main.go")
	cs := f.build()
	for _, it := range cs.Items {
		if it.Refused != "" {
			t.Errorf("%s refused: %s", it.Path, it.Refused)
		}
	}
	_, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if f.read("README.md") != "a\n" || f.read("readme.md") != "b\n" || !exists(f, "Main.go") || exists(f, "main.go") {
		t.Errorf("README.md %q, readme.md %q, Main.go %v, main.go %v", f.read("README.md"), f.read("readme.md"), exists(f, "Main.go"), exists(f, "main.go"))
	}
}
