package review

import (
	"os"
	"path/filepath"
	"testing"
)

// Environment variables naming directories on real volumes whose name rules are known. CI's macOS
// job (hack/ci-macos.sh) sets them to APFS disk images it makes with hdiutil: one
// case-insensitive (APFS's default, what most Macs have), one case-sensitive.
const (
	envVolumeFolding   = "LIMACTL_MCP_TEST_VOLUME_FOLDING"
	envVolumeSensitive = "LIMACTL_MCP_TEST_VOLUME_SENSITIVE"
)

// The probe and the rule's key on a real volume, not on hard links standing in for one
// (TestProbeNameRule): what the probe says is what the volume does, tried by making a file under
// one spelling and looking it up under another, and every two names the volume takes for one
// file have one key, so that review groups them and never writes one over the other.
func TestProbeNameRuleOnVolume(t *testing.T) {
	vols := []struct {
		env   string
		folds bool
	}{{envVolumeFolding, true}, {envVolumeSensitive, false}}
	ran := false
	for _, v := range vols {
		root := os.Getenv(v.env)
		if root == "" {
			continue
		}
		ran = true
		t.Run(v.env, func(t *testing.T) { checkVolumeRule(t, root, v.folds) })
	}
	if !ran {
		t.Skipf("no volume to probe: set %s and/or %s to a directory on a case-insensitive / case-sensitive volume (hack/ci-macos.sh does, on APFS disk images)", envVolumeFolding, envVolumeSensitive)
	}
}

func checkVolumeRule(t *testing.T, root string, wantFold bool) {
	dir, err := os.MkdirTemp(root, "namefold-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })

	// The probe of a directory with no entries looks the directory itself up in its parent.
	empty := filepath.Join(dir, "EmptyDir")
	must(t, os.Mkdir(empty, 0o755))
	if r := probeNameRule(empty); r.FoldCase != wantFold {
		t.Errorf("empty directory on %s: the probe says %+v, want FoldCase %v", root, r, wantFold)
	}

	probe := filepath.Join(dir, "probe")
	must(t, os.Mkdir(probe, 0o755))
	folds := sameSpelling(t, probe, "Readme.md", "rEADME.MD")
	if folds != wantFold {
		t.Fatalf("%s folds case: %v, want %v: it is not on the kind of volume its variable names", root, folds, wantFold)
	}
	normalizes := sameSpelling(t, probe, "caf\u00e9.txt", "cafe\u0301.txt")
	t.Logf("%s: folds case %v, normalization-insensitive %v", root, folds, normalizes)
	r := probeNameRule(probe)
	if r.FoldCase != folds || r.Normalize != normalizes {
		t.Errorf("the probe says %+v; the volume folds case: %v, normalization: %v", r, folds, normalizes)
	}

	// Names the volume may take for one: case (ASCII, Greek with final sigma, the Kelvin sign,
	// sharp s, dotted I, a ligature), normalization (NFC and NFD), both at once.
	pairs := [][2]string{
		{"Makefile", "makefile"},
		{"ΟΔΟΣ.txt", "οδος.txt"},
		{"οδος.txt", "οδοσ.txt"},
		{"\u212a.txt", "k.txt"},
		{"straße.txt", "STRASSE.txt"},
		{"\u0130.txt", "i\u0307.txt"},
		{"\ufb01le.txt", "FILE.txt"},
		{"\u00c4.txt", "a\u0308.txt"},
		{"\u00c5ngstr\u00f6m.txt", "a\u030angstro\u0308m.txt"},
	}
	for i, p := range pairs {
		sub := filepath.Join(dir, "pair", string(rune('a'+i)))
		must(t, os.MkdirAll(sub, 0o755))
		if !sameSpelling(t, sub, p[0], p[1]) {
			continue
		}
		if r.key(p[0]) != r.key(p[1]) {
			t.Errorf("%s takes %q and %q for one file, but the rule %+v gives them the keys %q and %q", root, p[0], p[1], r, r.key(p[0]), r.key(p[1]))
		}
	}
}

// sameSpelling makes a file named a in dir and says whether the name b finds that same file.
func sameSpelling(t *testing.T, dir, a, b string) bool {
	t.Helper()
	pa := filepath.Join(dir, a)
	must(t, os.WriteFile(pa, []byte(a), 0o644))
	return sameFile(pa, filepath.Join(dir, b))
}
