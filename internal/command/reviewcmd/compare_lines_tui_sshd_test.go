package reviewcmd_test

import (
	"testing"
	"time"
)

// Lines within a session's hunk in the compare's TUI, in a real terminal, on forks on a real
// sshd, with the review's keys: "s" on a session's hunk lists its changed lines, space leaves
// one out. Lines chosen that change a line another session's hunk changes are refused on the
// screen and chosen again; the host gets exactly the lines chosen and the other's hunks.
func TestCompareTUILines(t *testing.T) {
	f := linesFixture(t)
	s := startCompare(t, f, 170, 40, "try1,try2")
	const wait = time.Minute
	s.WaitFor(wait, "[1/1] p.txt · compare", "choose hunks of each session")
	s.Keys("Down", "Down", "Enter") // choose hunks of each session
	s.WaitFor(wait, "try1: hunk 1 of 1", "s: split into lines", "Take hunk 1 of 1 of try1?")
	s.Keys("s")
	s.WaitFor(wait, "Lines of hunk 1 of 1 to take", "> ✓ − l3", "✓ + X3", "✓ − l5", "✓ + X5")
	// First X5 only, which changes line 5 as try2's first hunk does.
	s.Keys("Space")
	s.WaitFor(wait, "> • − l3")
	s.Keys("Down", "Space")
	s.WaitFor(wait, "> • + X3")
	s.Keys("Enter")
	s.WaitFor(wait, "Take hunk 1 of 2 of try2?", "+Y5")
	s.Keys("y")
	s.WaitFor(wait, "Take hunk 2 of 2 of try2?", "+Y13")
	s.Keys("y")
	s.WaitFor(wait, "These hunks cannot be taken together", "the lines chosen of hunk 1 of try1 and hunk 1 of try2 change the same lines")
	s.Keys("y") // choose again
	s.WaitFor(wait, "[1/1] p.txt · compare", "> choose hunks of each session")
	s.Keys("Enter")
	s.WaitFor(wait, "Take hunk 1 of 1 of try1?")
	s.Keys("s")
	s.WaitFor(wait, "Lines of hunk 1 of 1 to take", "> ✓ − l3")
	// Now X3 only.
	s.Keys("Down", "Down", "Space")
	s.WaitFor(wait, "> • − l5")
	s.Keys("Down", "Space")
	s.WaitFor(wait, "> • + X5")
	s.Keys("Enter")
	s.WaitFor(wait, "Take hunk 1 of 2 of try2?")
	s.Keys("y")
	s.WaitFor(wait, "Take hunk 2 of 2 of try2?")
	s.Keys("y")
	s.WaitFor(wait, "Apply these changes?", "write p.txt", "(from try1 and try2)")
	if f.ReadHost("p.txt") != pWith(nil) {
		t.Error("the host changed before the confirmation")
	}
	s.Keys("y")
	s.WaitFor(wait, "Applied: 1 path written on the host, through session try1", "review done")
	if got, want := f.ReadHost("p.txt"), pWith(map[int]string{3: "X3", 5: "Y5", 13: "Y13"}); got != want {
		t.Errorf("p.txt on the host:\n%s\nwant\n%s", got, want)
	}
}

// The same in accessible mode: a session's hunk is taken, left or split into its lines by one
// question, and a line is left out by typing its number, as in the review.
func TestCompareTUILinesAccessible(t *testing.T) {
	f := linesFixture(t)
	s := startCompare(t, f, 100, 40, "try1,try2", "LMCP_H_ACCESSIBLE=1")
	const wait = time.Minute
	s.WaitFor(wait, "+Y13", "What should the host get?", "3. choose hunks of each session")
	s.TypeLine("3")
	s.WaitFor(wait, "try1: hunk 1 of 1: what should happen?", "1. take the hunk", "2. leave the hunk", "3. choose its lines one by one")
	s.TypeLine("3")
	s.WaitFor(wait, "Lines of hunk 1 of 1 to take", "1. ✓ − l3", "2. ✓ + X3", "3. ✓ − l5", "4. ✓ + X5", "0 when done")
	s.TypeLine("3")
	s.WaitFor(wait, "3.   − l5")
	s.TypeLine("4")
	s.WaitFor(wait, "4.   + X5")
	s.TypeLine("0")
	s.WaitFor(wait, "try2: hunk 1 of 2: what should happen?")
	s.TypeLine("1")
	s.WaitFor(wait, "try2: hunk 2 of 2: what should happen?")
	s.TypeLine("1")
	s.WaitFor(wait, "write p.txt (from try1 and try2)", "Apply these changes? [y/N]")
	s.TypeLine("y")
	s.WaitFor(wait, "Applied: 1 path written on the host, through session try1", "review done")
	if got, want := f.ReadHost("p.txt"), pWith(map[int]string{3: "X3", 5: "Y5", 13: "Y13"}); got != want {
		t.Errorf("p.txt on the host:\n%s\nwant\n%s", got, want)
	}
}
