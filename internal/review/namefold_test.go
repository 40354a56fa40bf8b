package review

import (
	"os"
	"path/filepath"
	"testing"
)

// The probe reads the rule off the directory's entries: a name whose case-swapped (or
// other-normalization) spelling is the same file. Hard links stand in for a filesystem that
// folds (none can be mounted here); a plain Linux directory folds nothing.
func TestProbeNameRule(t *testing.T) {
	plain := t.TempDir()
	must(t, os.WriteFile(filepath.Join(plain, "Readme.md"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(plain, "caf\u00e9.txt"), nil, 0o644))
	if r := probeNameRule(plain); r.FoldCase || r.Normalize {
		t.Errorf("plain directory: %+v", r)
	}
	folding := t.TempDir()
	must(t, os.WriteFile(filepath.Join(folding, "Readme.md"), nil, 0o644))
	must(t, os.Link(filepath.Join(folding, "Readme.md"), filepath.Join(folding, "rEADME.MD")))
	must(t, os.WriteFile(filepath.Join(folding, "caf\u00e9.txt"), nil, 0o644))
	must(t, os.Link(filepath.Join(folding, "caf\u00e9.txt"), filepath.Join(folding, "cafe\u0301.txt")))
	if r := probeNameRule(folding); !r.FoldCase || !r.Normalize {
		t.Errorf("folding directory: %+v", r)
	}
	// Case folded, nothing to try normalization on: taken as folded too (APFS, HFS+).
	caseOnly := t.TempDir()
	must(t, os.WriteFile(filepath.Join(caseOnly, "a.txt"), nil, 0o644))
	must(t, os.Link(filepath.Join(caseOnly, "a.txt"), filepath.Join(caseOnly, "A.TXT")))
	if r := probeNameRule(caseOnly); !r.FoldCase || !r.Normalize {
		t.Errorf("case-folding directory without a non-ASCII name: %+v", r)
	}
	k := NameRule{FoldCase: true, Normalize: true}
	if k.key("Cafe\u0301/README.md") != k.key("caf\u00e9/readme.MD") {
		t.Error("keys differ")
	}
	if (NameRule{}).key("A") == (NameRule{}).key("a") {
		t.Error("the empty rule folds case")
	}
}

// The fold takes at least the names a case-insensitive filesystem takes for one: full case
// folding (final sigma, sharp s, the Kelvin sign), and normalization after it.
func TestNameRuleKeyFolds(t *testing.T) {
	k := NameRule{FoldCase: true, Normalize: true}
	for _, pair := range [][2]string{{"ΟΔΟΣ", "οδος"}, {"οδος", "οδοσ"}, {"\u212a.txt", "k.txt"}, {"Ä.txt", "a\u0308.txt"}} {
		if k.key(pair[0]) != k.key(pair[1]) {
			t.Errorf("%q and %q have keys %q and %q", pair[0], pair[1], k.key(pair[0]), k.key(pair[1]))
		}
	}
	if k.key("bad\xff") == k.key("bad\xfe") {
		t.Error("two names that are not UTF-8 fold to one")
	}
}
