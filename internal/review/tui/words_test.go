package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// sgrBefore is the SGR state in force at the first occurrence of text in a captured screen
// (tmux's capture -e): the parameters of every SGR since the last reset, joined by ";".
func sgrBefore(t *testing.T, esc, text string) string {
	t.Helper()
	i := strings.Index(esc, text)
	if i < 0 {
		t.Fatalf("%q not on the screen:\n%s", text, esc)
	}
	var state []string
	for _, m := range regexp.MustCompile(`\x1b\[([0-9;]*)m`).FindAllStringSubmatch(esc[:i], -1) {
		if m[1] == "" || m[1] == "0" {
			state = nil
			continue
		}
		state = append(state, m[1])
	}
	return ";" + strings.Join(state, ";") + ";"
}

func wordItem() *review.Item {
	return textItem("net/fetch.go", staging.Modified,
		"package net\n\nfunc get() error {\n\treturn fetch(url, timeout)\n}\n",
		"package net\n\nfunc get() error {\n\treturn fetch(url, deadline)\n}\n")
}

func wsItem() *review.Item {
	return textItem("ws.go", staging.Modified, "a\n  b := 1\nc\n", "a\n\tb  :=  1\nc\n")
}

// The changed word of a replaced line is marked (reverse video), the rest of the line is
// not, in the diff view at every size the issue names.
func TestTUIWordLevelHighlight(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			s := startTUIAt(t, size[0], size[1], "", &review.Changeset{Items: []*review.Item{wordItem(), wsItem()}})
			s.waitFor("> ✓ M net/fetch.go")
			s.keys("v")
			if size[0] >= autoSideBySide {
				// Side by side on a wide terminal: s shows it unified.
				s.waitFor("│ 4 +    return fetch(url, deadline)")
				s.keys("s")
			}
			s.waitFor("-    return fetch(url, timeout)", "+    return fetch(url, deadline)")
			esc := s.screenEsc()
			for _, w := range []string{"deadline", "timeout"} {
				if st := sgrBefore(t, esc, w); !strings.Contains(st, ";7;") {
					t.Errorf("%s: not marked as a changed word (SGR %s):\n%q", w, st, esc)
				}
			}
			// Syntax colour (a 256-colour terminal): the keyword of an unchanged line.
			if st := sgrBefore(t, esc, "package"); !strings.Contains(st, ";35;") {
				t.Errorf("package: no syntax colour (SGR %s)", st)
			}
			for _, w := range []string{"+    return fetch(url, ", "-    return fetch(url, "} {
				if st := sgrBefore(t, esc, w); strings.Contains(st, ";7;") {
					t.Errorf("%q: the unchanged part is marked (SGR %s)", w, st)
				}
			}
			s.keys("q")
			s.waitFor("> ✓ M net/fetch.go")
			s.keys("Down", "v")
			// A change of white space only says so (unified: s chose it for the whole review), and w hides it (the line shown once).
			s.waitFor("@@ -1,3 +1,3 @@  white space only", "-  b := 1", "+    b  :=  1", "w: hide white")
			s.keys("w")
			scr := s.waitFor("white space only (hidden: w shows it)", "     b  :=  1", "w: show white")
			if strings.Contains(scr, "-  b := 1") {
				t.Errorf("the white space change is still shown:\n%s", scr)
			}
			s.keys("w")
			s.waitFor("-  b := 1", "w: hide white")
			s.keys("q")
			s.waitFor("> ✓ M ws.go")
			s.keys("C-c")
			if _, aborted := s.outcome(); !aborted {
				t.Fatal("not aborted")
			}
		})
	}
}

// Under NO_COLOR the screens hold no colour (no SGR colour parameters at all).
func TestTUINoColor(t *testing.T) {
	t.Parallel()
	s := startTUIAt(t, 80, 24, "NO_COLOR=1", &review.Changeset{Items: []*review.Item{wordItem(), added()}})
	s.waitFor("> ✓ M net/fetch.go")
	s.keys("v")
	s.waitFor("+    return fetch(url, deadline)")
	esc := s.screenEsc()
	for _, m := range regexp.MustCompile(`\x1b\[([0-9;]*)m`).FindAllStringSubmatch(esc, -1) {
		for _, p := range strings.Split(m[1], ";") {
			if p == "38" || p == "48" || (len(p) == 2 && (p[0] == '3' || p[0] == '4' || p[0] == '9') && p[1] <= '7') || (len(p) == 3 && p[:2] == "10") {
				t.Fatalf("colour SGR %q under NO_COLOR:\n%q", m[0], esc)
			}
		}
	}
	s.keys("C-c")
	if _, aborted := s.outcome(); !aborted {
		t.Fatal("not aborted")
	}
}

// An added text file shows its lines, as any diff does.
func TestTUIAddedFileShowsLines(t *testing.T) {
	t.Parallel()
	s := startTUI(t, &review.Changeset{Items: []*review.Item{added(), oneHunk()}})
	s.waitFor("> ✓ A docs/new.txt  +2 −0")
	s.keys("v")
	s.waitFor("@@ -0,0 +1,2 @@", "+fresh", "+file")
	s.keys("q")
	s.waitFor("> ✓ A docs/new.txt")
	s.keys("C-c")
	if _, aborted := s.outcome(); !aborted {
		t.Fatal("not aborted")
	}
}

// Side by side: the old line on the left, the new one on the right of the same row, with
// line numbers; s toggles it (above 100 columns), unified below.
func TestTUISideBySide(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			it := textItem("lib/a.txt", staging.Modified, numbered(12, nil), numbered(12, map[int]string{5: "line five", 9: "line 9 and more"}))
			s := startTUIAt(t, size[0], size[1], "", &review.Changeset{Items: []*review.Item{it}})
			s.waitFor("> ✓ M lib/a.txt")
			s.keys("v")
			row := regexp.MustCompile(`(?m)^ *5 -line 5 +│ +5 \+line five *$`)
			switch {
			case size[0] >= autoSideBySide:
				scr := s.waitFor("line five", "s: side by side")
				if !row.MatchString(scr) {
					t.Fatalf("not side by side:\n%s", scr)
				}
				esc := s.screenEsc()
				if st := sgrBefore(t, esc, "five"); !strings.Contains(st, ";7;") {
					t.Errorf("five: no word mark side by side (SGR %s)", st)
				}
				s.keys("s")
				scr = s.waitFor("\n-line 5\n+line five")
				if row.MatchString(scr) {
					t.Fatalf("still side by side:\n%s", scr)
				}
			case size[0] >= minSideBySide:
				s.waitFor("-line 5", "+line five", "s: side by side")
				s.keys("s")
				scr := s.waitFor("line five", "9 +line 9 and more")
				if !row.MatchString(scr) {
					t.Fatalf("s did not lay it out side by side:\n%s", scr)
				}
			default:
				// Too narrow: unified, and s is not offered (painter.toggleSideBySide keeps it
				// unified, TestSideBySideWidths).
				scr := s.waitFor("-line 5", "+line five")
				if row.MatchString(scr) || strings.Contains(scr, "side by side") {
					t.Fatalf("side by side at %d columns:\n%s", size[0], scr)
				}
			}
			s.keys("q")
			s.waitFor("> ✓ M lib/a.txt")
			s.keys("C-c")
			if _, aborted := s.outcome(); !aborted {
				t.Fatal("not aborted")
			}
		})
	}
}

// A 500-file change, navigated with viewed marks to completion: v marks the file it shows, m
// marks the one under the cursor and goes to the next unviewed, n and c jump; the progress
// line counts; a choice made in the list (a file left out) survives the marks.
func TestTUILargeChangeViewedToCompletion(t *testing.T) {
	t.Parallel()
	const files = 500
	cs := &review.Changeset{}
	for i := range files {
		it := textItem(fmt.Sprintf("pkg%02d/file%03d.go", i/25, i), staging.Modified, "a\n", fmt.Sprintf("b%d\n", i))
		if i == 7 || i == 300 {
			it.Conflict = true
		}
		cs.Items = append(cs.Items, it)
	}
	s := startTUIFor(t, 600, 120, 40, "", cs)
	// A large change in several directories starts as a tree; t shows the flat list.
	s.waitFor("viewed 0 of 500 · 2 conflicts", "> • ▾ pkg00/  25 files · 1 conflict · 24 selected", "✓   M file000.go")
	s.keys("t")
	s.waitFor("> ✓ M pkg00/file000.go")
	// Leave file001 out; view file002 (v marks it).
	s.keys("Down")
	s.waitFor("> ✓ M pkg00/file001.go")
	s.keys("Space")
	s.waitFor("> • M pkg00/file001.go")
	s.keys("Down")
	s.waitFor("> ✓ M pkg00/file002.go")
	s.keys("v")
	s.waitFor("M pkg00/file002.go  +1 −1", "+b2")
	s.keys("q")
	s.waitFor("viewed 1 of 500", "> ✓ M pkg00/file002.go  +1 −1 · viewed", "  • M pkg00/file001.go")
	// c: the next conflict.
	// A jump redraws the list once per half page (listNav.moveTo): generous waits.
	s.keys("c")
	s.WaitFor(time.Minute, "> • C M pkg00/file007.go")
	s.keys("c")
	s.WaitFor(time.Minute, "> • C M pkg12/file300.go")
	s.keys("Home")
	s.WaitFor(time.Minute, "> ✓ M pkg00/file000.go")
	// m through all of them.
	for k := 1; k < files; k++ {
		s.keys("m")
		s.WaitFor(time.Minute, fmt.Sprintf("viewed %d of 500", k+1))
	}
	scr := s.waitFor("viewed 500 of 500")
	if !strings.Contains(scr, " · viewed") {
		t.Fatalf("no viewed marks:\n%s", scr)
	}
	s.keys("Enter")
	s.waitFor("Also revert these rejected files in the guest?")
	s.keys("Enter")
	// The two conflicts are not selected; the person did not select them: no conflict step.
	s.waitFor("Apply these changes?")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted || len(decs) != files {
		t.Fatalf("aborted %v, %d decisions", aborted, len(decs))
	}
	for i, d := range decs {
		want := review.Accept
		switch i {
		case 1:
			want = review.Reject
		case 7, 300:
			want = review.Skip
		}
		if d.Action != want {
			t.Errorf("%s: %s, want %s", d.Path, d.Action, want)
		}
	}
}

// "/" in the diff view finds text as the screen shows it; esc while typing cancels the search
// (it does not abort the review); n finds the next.
func TestTUIDiffSearch(t *testing.T) {
	t.Parallel()
	s := startTUI(t, &review.Changeset{Items: []*review.Item{threeHunks()}})
	s.waitFor("> ✓ M src/three.go")
	s.keys("v")
	s.waitFor("@@ -1,6 +1,6 @@", "1-22/26")
	s.keys("/")
	s.waitFor("(enter: search · esc: cancel)")
	s.keys("Escape")
	s.waitFor("q/enter: back", "1-22/26")
	s.keys("/")
	s.waitFor("(enter: search · esc: cancel)")
	s.TypeLine("THIRTY-seven")
	scr := s.waitFor("+changed thirty-seven", "5-26/26")
	if strings.Contains(scr, "not found") {
		t.Fatalf("not found:\n%s", scr)
	}
	s.keys("g")
	s.waitFor("1-22/26")
	s.keys("/")
	s.waitFor("(enter: search · esc: cancel)")
	s.TypeLine("nowhere")
	s.waitFor("not found: nowhere")
	s.keys("q")
	s.waitFor("> ✓ M src/three.go")
	s.keys("C-c")
	if _, aborted := s.outcome(); !aborted {
		t.Fatal("not aborted")
	}
}
