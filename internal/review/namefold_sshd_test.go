package review_test

import (
	"context"
	"io/fs"
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

func item(cs *review.Changeset, path string) *review.Item {
	for _, it := range cs.Items {
		if it.Path == path {
			return it
		}
	}
	return nil
}

// hostState is every entry of the host directory with its content (files) or target (links).
func hostState(t *testing.T, f *fx) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(f.host, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(f.host, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := rel + " " + fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			tgt, _ := os.Readlink(p)
			line += " -> " + tgt
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			line += " " + string(data)
		}
		out = append(out, line)
		return nil
	})
	must(t, err)
	return strings.Join(out, "\n")
}

// On a host directory that does not tell case apart (APFS, NTFS), names that differ only in
// case are one file. A rename that only changes case is one item, applied as a rename (the
// old name goes, the new one comes, in one apply, undone as one); two guest names for one
// host name are a collision of which the person accepts at most one, the other staying
// pending; a directory among such names is refused whole; the rest applies.
func TestCaseFoldingRenamesAndCollisions(t *testing.T) {
	forceNameRule(t, review.NameRule{FoldCase: true, Normalize: true})
	f := newFx(t)
	f.guest("echo a > README.md && echo b > readme.md && mv main.go Main.go && mv long.txt LONG.txt && sed -i 's/^line 30$/LINE 30/' LONG.txt && mkdir -p Src/lib && echo x > Src/lib/new.go && echo ok > fine.txt")
	cs := f.build()
	for _, p := range []string{"main.go", "long.txt"} {
		if it := item(cs, p); it != nil {
			t.Errorf("%s is listed apart from its rename: %s", p, it.Description)
		}
	}
	for p, from := range map[string]string{"Main.go": "main.go", "LONG.txt": "long.txt"} {
		it := item(cs, p)
		if it == nil || it.From == nil || it.From.Path != from || it.Refused != "" || it.Conflict || !strings.Contains(it.Description, "renamed from "+from) {
			t.Fatalf("%s is not a clean rename from %s: %+v", p, from, it)
		}
	}
	if it := item(cs, "LONG.txt"); !it.Text || len(it.Hunks) != 1 || it.Added != 1 || it.Removed != 1 {
		t.Errorf("LONG.txt: the diff is not from long.txt's version: text %v, %d hunks, +%d -%d", it.Text, len(it.Hunks), it.Added, it.Removed)
	}
	if it := item(cs, "Main.go"); it.Text && len(it.Hunks) != 0 {
		t.Errorf("Main.go: a content change shown for a rename that kept the content: %+v", it.Hunks)
	}
	for p, other := range map[string]string{"README.md": "readme.md", "readme.md": "README.md"} {
		it := item(cs, p)
		if it == nil || !it.Conflict || it.Refused != "" || len(it.Collides) != 1 || it.Collides[0] != other || !strings.Contains(it.Description, "COLLISION") {
			t.Errorf("%s is not a collision with %s: %+v", p, other, it)
		}
	}
	if why := refusedWhy(cs, "Src"); !strings.Contains(why, "Src and src are one name on this host directory") || !strings.Contains(why, "directory") {
		t.Errorf("Src: refused %q", why)
	}
	if why := refusedWhy(cs, "Src/lib/new.go"); why == "" {
		t.Error("Src/lib/new.go (below a refused directory) is not refused")
	}
	if why := refusedWhy(cs, "fine.txt"); why != "" {
		t.Errorf("fine.txt refused: %s", why)
	}
	// Both names of a collision accepted: no plan (the second would land on the first).
	decide := func(readme, README review.Action) []review.Decision {
		return []review.Decision{
			{Path: "Main.go", Action: review.Accept}, {Path: "LONG.txt", Action: review.Accept},
			{Path: "README.md", Action: README}, {Path: "readme.md", Action: readme}, {Path: "fine.txt", Action: review.Accept},
		}
	}
	if _, err := review.Plan(cs, decide(review.TakeGuest, review.TakeGuest)); err == nil || !strings.Contains(err.Error(), "one name on this host directory") {
		t.Errorf("both names of a collision accepted: %v", err)
	}
	if _, err := review.Plan(cs, []review.Decision{{Path: "Main.go", Action: review.RejectRevert}}); err == nil {
		t.Error("reject-revert of a rename is planned")
	}
	// Rejecting everything leaves the host as it was, byte for byte.
	before := hostState(t, f)
	rep, err := review.Apply(context.Background(), f.sess, cs, []review.Decision{
		{Path: "Main.go", Action: review.Reject}, {Path: "LONG.txt", Action: review.Reject},
		{Path: "README.md", Action: review.Skip}, {Path: "readme.md", Action: review.Skip}, {Path: "fine.txt", Action: review.Reject},
	})
	must(t, err)
	if got := hostState(t, f); got != before || len(rep.Written) != 0 {
		t.Fatalf("rejecting everything changed the host (wrote %v):\n%s\n---\n%s", rep.Written, before, got)
	}
	cs = f.build()
	planned, err := review.Plan(cs, decide(review.Skip, review.TakeGuest))
	must(t, err)
	var said []string
	for _, p := range planned {
		said = append(said, p.Sentence)
	}
	for _, want := range []string{"rename main.go → Main.go", "rename long.txt → LONG.txt and write the guest's version", "create README.md (collision: readme.md stays pending in the guest)"} {
		if !strings.Contains(strings.Join(said, "\n"), want) {
			t.Errorf("the plan does not say %q: %q", want, said)
		}
	}
	rep, err = review.Apply(context.Background(), f.sess, cs, decide(review.Skip, review.TakeGuest))
	must(t, err)
	if len(rep.Refused) != 0 {
		t.Errorf("refused: %v", rep.Refused)
	}
	for _, p := range []string{"main.go", "long.txt", "readme.md", "Src", "src/lib/new.go"} {
		if exists(f, p) {
			t.Errorf("%s is on the host after the apply", p)
		}
	}
	if got := f.read("Main.go"); got != "package main\n\nfunc main() {}\n" {
		t.Errorf("Main.go on the host: %q", got)
	}
	if got := f.read("LONG.txt"); !strings.Contains(got, "\nLINE 30\n") || strings.Contains(got, "\nline 30\n") {
		t.Errorf("LONG.txt on the host: %q", got)
	}
	if f.read("README.md") != "a\n" || f.read("fine.txt") != "ok\n" {
		t.Errorf("README.md %q, fine.txt %q", f.read("README.md"), f.read("fine.txt"))
	}
	// The loser stays pending, a collision still: with the host's README.md now.
	cs = f.build()
	if it := item(cs, "readme.md"); it == nil || len(it.Collides) != 1 || it.Collides[0] != "README.md" || it.From == nil || it.From.Path != "README.md" {
		t.Errorf("readme.md is not pending as a collision with the host's README.md: %+v", it)
	}
	for _, p := range []string{"Main.go", "LONG.txt", "README.md", "main.go", "long.txt"} {
		if it := item(cs, p); it != nil {
			t.Errorf("%s still pending after its rename was applied: %s", p, it.Description)
		}
	}
	// Undo puts back the old names, and only them.
	urep, err := review.Undo(context.Background(), f.sess)
	must(t, err)
	if len(urep.Refused) != 0 {
		t.Errorf("undo refused: %v", urep.Refused)
	}
	if got := hostState(t, f); got != before {
		t.Errorf("after undo the host is not as before:\n%s\n---\n%s", before, got)
	}
}

// A rename whose old name the person edits on the host while the review is open is applied
// neither half: the edit stays, and no new name appears next to it.
func TestFoldRenameNeverOverAHostEdit(t *testing.T) {
	forceNameRule(t, review.NameRule{FoldCase: true})
	f := newFx(t)
	f.guest("mv main.go Main.go && mv run.sh RUN.sh")
	cs := f.build()
	f.write("main.go", "// the person's edit\n", 0o644)
	rep, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if got := f.read("main.go"); got != "// the person's edit\n" {
		t.Errorf("the person's edit of main.go: %q", got)
	}
	if exists(f, "Main.go") {
		t.Error("Main.go was written next to the edited main.go")
	}
	if !exists(f, "RUN.sh") || exists(f, "run.sh") {
		t.Errorf("the other rename was not applied: RUN.sh %v, run.sh %v (refused %v)", exists(f, "RUN.sh"), exists(f, "run.sh"), rep.Refused)
	}
	if !strings.Contains(strings.Join(rep.Refused, "\n"), "Main.go") {
		t.Errorf("the refusal does not name the rename: %v", rep.Refused)
	}
	// Seen before the apply, the host's edit makes the rename a conflict: take-guest or skip.
	cs = f.build()
	it := item(cs, "Main.go")
	if it == nil || !it.Conflict || it.From == nil || !strings.Contains(it.Description, "CONFLICT: the host changed it too") {
		t.Fatalf("Main.go after a host edit of main.go: %+v", it)
	}
	if _, err := review.Plan(cs, []review.Decision{{Path: "Main.go", Action: review.Accept}}); err == nil {
		t.Error("a conflicting rename accepted without take-guest")
	}
	if _, err := review.Plan(cs, []review.Decision{{Path: "Main.go", Action: review.KeepHost}}); err == nil {
		t.Error("keep-host planned for a rename")
	}
}

// On a host directory that does not tell Unicode normalization forms apart (HFS+, APFS), an
// NFD and an NFC spelling of one name are one file: a collision; case is told apart here.
func TestNormalizationCollisions(t *testing.T) {
	forceNameRule(t, review.NameRule{Normalize: true})
	f := newFx(t)
	nfd, nfc := "cafe\u0301.txt", "caf\u00e9.txt"
	f.guest(`printf x > "$(printf 'cafe\314\201.txt')" && printf y > "$(printf 'caf\303\251.txt')" && echo a > README.md && echo b > readme.md`)
	cs := f.build()
	for p, other := range map[string]string{nfd: nfc, nfc: nfd} {
		if it := item(cs, p); it == nil || !it.Conflict || len(it.Collides) != 1 || it.Collides[0] != other {
			t.Errorf("%q is not a collision with %q: %+v", p, other, it)
		}
	}
	_, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	// acceptAll takes the first of a collision (by path order, the NFD one).
	if f.read(nfd) != "x" || exists(f, nfc) {
		t.Errorf("%q %q, %q exists %v", nfd, f.read(nfd), nfc, exists(f, nfc))
	}
	if f.read("README.md") != "a\n" || f.read("readme.md") != "b\n" {
		t.Errorf("README.md %q, readme.md %q", f.read("README.md"), f.read("readme.md"))
	}
	if it := item(f.build(), nfc); it == nil || len(it.Collides) != 1 {
		t.Errorf("the NFC name is not pending as a collision: %+v", it)
	}
}

// A review of some paths takes every name that is one with them: a selection cannot hide a
// collision.
func TestFoldSelectionTakesTheWholeName(t *testing.T) {
	forceNameRule(t, review.NameRule{FoldCase: true})
	f := newFx(t)
	f.guest("echo a > README.md && echo b > readme.md && echo c > other.txt")
	cs, err := review.Build(context.Background(), f.sess, []string{"README.md"})
	must(t, err)
	if got := items(cs); !strings.Contains(got, "readme.md") || strings.Contains(got, "other.txt") {
		t.Errorf("review README.md lists: %s", got)
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

// A host name renamed by case since it was staged is not the staged one: a guest change of
// either spelling is refused whole, never taken for a rename of the host's file (on a folding
// filesystem a removal of the staged spelling would remove the host's renamed file).
func TestFoldHostRenamedSinceStaging(t *testing.T) {
	forceNameRule(t, review.NameRule{FoldCase: true})
	f := newFx(t)
	must(t, os.Rename(filepath.Join(f.host, "main.go"), filepath.Join(f.host, "Main.go")))
	f.guest("echo guest > Main.go")
	cs := f.build()
	if why := refusedWhy(cs, "Main.go"); !strings.Contains(why, "renamed on the host since") {
		t.Errorf("Main.go: refused %q (%+v)", why, item(cs, "Main.go"))
	}
	before := hostState(t, f)
	_, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if got := hostState(t, f); got != before {
		t.Errorf("the host changed:\n%s\n---\n%s", before, got)
	}
}
