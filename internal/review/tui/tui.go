// Package tui is the review's terminal UI (charmbracelet huh and bubbletea): a summary, every
// diff on request, per-file and per-hunk choices, conflicts, and a confirmation that renders
// review.Plan. It only chooses: building the changeset and applying it are review's.
package tui

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"golang.org/x/term"

	"github.com/limactl-mcp/limactl-mcp/internal/netwatch"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// Options tune the review TUI.
type Options struct {
	Accessible    bool // huh's accessible mode (screen readers): plain prompts, no full-screen UI
	Width, Height int  // 0 = terminal size
	// Notice is a line shown above the list of files: what the agent did on the network under
	// its policy, which the person weighs with the changes.
	Notice string
	// Secrets are the session's lines of secrets' uses (secrets.UsesSummary), shown under the
	// Notice as review.SecretsLines; none: nothing shown.
	Secrets []string
	// Requests are the session's lines of HTTPS requests the network rules ruled on
	// (secrets.Summaries), shown after the Secrets.
	Requests []string
	// SessionSecrets are a compare's lines of secrets' uses, a block per session, each line
	// named ("Session try1: Secrets: ANTHROPIC_API_KEY used 3 times, …"), shown on its
	// confirmation above what will be done; none: nothing shown.
	SessionSecrets []string
	// Timeline is the session's timeline (nil: none): the file list's "l" shows all of it.
	Timeline *timeline.Timeline
	// Watch is how to watch the session's refused destinations (nil: none to watch): the file
	// list's "w" shows them live, to allow or dismiss, as `limactl mcp watch` does.
	Watch *netwatch.Source
	// NoWatch is what "w" says when Watch is nil (why there is nothing to watch; "": that
	// the session has no network policy to watch).
	NoWatch string
}

// ErrAborted is returned when the person pressed Ctrl-C or Esc: nothing must be applied.
var ErrAborted = errors.New("review aborted: nothing was applied")

// Run lets a person decide what to do with every item of cs, then shows a final
// confirmation of exactly what will be written. It returns the decisions only when the person
// confirmed; ErrAborted on Ctrl-C/Esc at any point or when they decline the confirmation.
//
// The steps: the list of files (all non-conflicting ones pre-selected; unselected ones are
// rejected, selected conflicts are resolved in step 3), then for each selected text file with
// several hunks what to do with it (all hunks, some hunks, reject, reject and revert), then
// for each selected conflict keep-host/take-guest/skip (a rename under the host's name rule:
// take-guest/skip; a collision, names the host takes for one: which one it gets, if any, asked
// once for all of them), then the confirmation (default No).
// Refused items are shown with their reason and get no decision; every other item gets one.
//
// Keys of the full-screen UI: ↑/↓ or j/k move; space or x toggle a file, ctrl+a all/none, /
// filters the list; n goes to the next unviewed file, c to the next conflict, m marks a file
// viewed (listnav.go); l shows the session's whole timeline (timeline.go), w its refused
// destinations to allow or dismiss (watch.go); t shows the list as
// a tree by directory, ←/→ fold and unfold, space on a directory's row selects or leaves out
// all of it (filetree.go); h chooses the hunks and
// lines of the file at the cursor, s on a hunk its lines (lines.go); enter goes on; y/n
// answer a hunk or the confirmation; v shows the whole
// diff of the file at hand (or the whole plan) in a scrollable view (↑/↓, j/k, PgUp/PgDn,
// space/b, g/G; / searches, n finds the next; w hides white-space-only changes; s side by
// side; q or enter go back) and marks the file viewed; esc (unless closing the filter or a
// search) or ctrl+c abort. In
// accessible mode (also when TERM=dumb) the prompts read lines: numbers, y/n, in plain text;
// hunks and lines are chosen by questions instead of s and h (acclines.go); a line with
// Esc, Ctrl-C, Ctrl-D or the end of the input abort.
func Run(cs *review.Changeset, in io.Reader, out io.Writer, opts Options) ([]review.Decision, error) {
	if cs == nil || len(cs.Items) == 0 {
		return []review.Decision{}, nil
	}
	r, done := newReviewer(cs, in, out, opts)
	defer done()
	decs, err := r.run()
	if err != nil {
		return nil, err
	}
	return decs, nil
}

// newReviewer sets up the terminal's keys, theme and painter for a review of cs; done ends
// what it started (accessible mode's input reader).
func newReviewer(cs *review.Changeset, in io.Reader, out io.Writer, opts Options) (r *reviewer, done func()) {
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	r = &reviewer{cs: cs, in: in, out: out, opts: opts}
	r.accessible = opts.Accessible || os.Getenv("TERM") == "dumb"
	r.keymap = huh.NewDefaultKeyMap()
	// Esc is handled by formModel (it aborts unless it closes a filter); Ctrl-C by both.
	r.keymap.Quit = key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c/esc", "abort"))
	// huh's help line under a file list says what the list's own description says (space
	// toggles, enter continues), in the same words.
	r.keymap.MultiSelect.Toggle = key.NewBinding(key.WithKeys(" ", "x"), key.WithHelp("space", "toggle"))
	r.keymap.MultiSelect.Next = key.NewBinding(key.WithKeys("enter", "tab"), key.WithHelp("enter", "continue"))
	r.keymap.MultiSelect.Submit = key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "continue"))
	// The selects have a handful of options: no filter (and "/" does nothing).
	r.keymap.Select.Filter.SetEnabled(false)
	r.paint = newPainter(lipgloss.NewRenderer(out), r.accessible)
	// huh's themes use adaptive colours: the first time one is rendered, lipgloss asks the
	// terminal for its background colour and reads the answer from the terminal, which
	// would swallow a key typed at that moment (or wait for an answer bubbletea read).
	// Ask now, before any screen is shown.
	_ = lipgloss.HasDarkBackground()
	r.theme = theme()
	done = func() {}
	if r.accessible {
		stop := r.startAccessibleInput()
		// Plain text for a screen reader: huh's accessible prompts render their titles with
		// the theme's colours and bold through lipgloss's default renderer; without colour
		// (as NO_COLOR makes it) they are plain.
		prev := lipgloss.ColorProfile()
		lipgloss.SetColorProfile(termenv.Ascii)
		done = func() {
			lipgloss.SetColorProfile(prev)
			stop()
		}
	}
	return r, done
}

type reviewer struct {
	cs         *review.Changeset
	in         io.Reader
	out        io.Writer
	opts       Options
	accessible bool
	acc        *accInput
	keymap     *huh.KeyMap
	theme      *huh.Theme
	paint      *painter
	// watch is the session's watch of refused destinations, made at the first "w" and kept
	// (what was dismissed stays so) for the rest of the review.
	watch *netwatch.Watch
}

// size is the size of the screen: the options, else the terminal's, else 80×24.
func (r *reviewer) size() (w, h int) {
	w, h = r.opts.Width, r.opts.Height
	if w <= 0 || h <= 0 {
		tw, th := 80, 24
		if f, ok := r.out.(*os.File); ok {
			if x, y, err := term.GetSize(int(f.Fd())); err == nil && x > 0 && y > 0 {
				tw, th = x, y
			}
		}
		if w <= 0 {
			w = tw
		}
		if h <= 0 {
			h = th
		}
	}
	return max(w, 20), max(h, 10)
}

// width is the width to lay text out for; in accessible mode text is never wrapped (a
// screen reader would read the continuation marks).
func (r *reviewer) width() int {
	if r.accessible {
		return 1 << 30
	}
	w, _ := r.size()
	return w
}

// noteWidth is the width of the text in a Note (its border and padding take 2 columns; one
// more for safety).
func (r *reviewer) noteWidth() int { return max(10, r.width()-4) }

func (r *reviewer) run() ([]review.Decision, error) {
	var items, refused []*review.Item
	for _, it := range r.cs.Items {
		if it == nil {
			continue
		}
		if it.Refused != "" {
			refused = append(refused, it)
		} else {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return []review.Decision{}, r.nothingToApply(refused)
	}
	if r.accessible {
		if err := r.offerAllDiffs(items); err != nil {
			return nil, err
		}
	}
	selected, pre, err := r.fileList(items, refused)
	if err != nil {
		return nil, err
	}
	if r.accessible {
		// What the list's "h" does in the full-screen UI (acclines.go).
		if err := r.lineFiles(items, selected, pre); err != nil {
			return nil, err
		}
	}
	decs := make([]review.Decision, len(items))
	for i, it := range items {
		decs[i] = review.Decision{Path: it.Path, Action: review.Reject}
		if it.Conflict {
			decs[i].Action = review.Skip
			continue
		}
		if !selected[i] {
			continue
		}
		if d, ok := pre[i]; ok {
			decs[i] = d // hunks and lines chosen from the list ("h")
			continue
		}
		if it.Text && len(it.Hunks) > 1 {
			d, err := r.perFile(it, i, len(items))
			if err != nil {
				return nil, err
			}
			decs[i] = d
			continue
		}
		decs[i].Action = review.Accept
	}
	if err := r.revertRejected(items, decs); err != nil {
		return nil, err
	}
	settled := map[string]bool{} // names of collisions already chosen for
	for i, it := range items {
		if !it.Conflict || !selected[i] || settled[it.Path] {
			continue
		}
		if len(it.Collides) > 0 {
			if err := r.collision(items, i, decs, settled); err != nil {
				return nil, err
			}
			continue
		}
		a, err := r.conflict(it)
		if err != nil {
			return nil, err
		}
		decs[i].Action = a
	}
	ok, err := r.confirm(decs)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrAborted
	}
	return decs, nil
}

// summaryLine is "3 files changed · +12 −3 · 1 conflict · 1 refused".
func summaryLine(s review.Summary) string {
	plural := func(n int, one, many string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, one)
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	parts := []string{plural(s.Files, "file changed", "files changed"), fmt.Sprintf("+%d −%d", s.Added, s.Removed)}
	if s.Conflicts > 0 {
		parts = append(parts, plural(s.Conflicts, "conflict", "conflicts"))
	}
	if s.Refused > 0 {
		parts = append(parts, fmt.Sprintf("%d refused", s.Refused))
	}
	return strings.Join(parts, " · ")
}

// refusedLines lists refused items with their reasons, at most max lines (0: all).
func (r *reviewer) refusedLines(refused []*review.Item, limit int) string {
	var lines []string
	for _, it := range refused {
		lines = append(lines, displayName(it)+": "+termsafe.String(it.Refused))
	}
	if limit > 0 && len(lines) > limit {
		more := len(lines) - (limit - 1)
		lines = append(lines[:limit-1], fmt.Sprintf("… and %d more", more))
	}
	return r.noteText(lines)
}

// noteText joins plain lines for a Note description (escaping huh's markup characters).
func (r *reviewer) noteText(lines []string) string {
	if r.accessible {
		return strings.Join(lines, "\n")
	}
	return noteMarkup.Replace(strings.Join(lines, "\n"))
}

func (r *reviewer) itemDoc(it *review.Item, hunk int) *doc {
	return &doc{
		title: label(it),
		render: func(width int) ([]string, int) {
			lines, at := r.paint.itemDoc(it, width)
			if hunk >= 0 && hunk < len(at) {
				return lines, at[hunk]
			}
			return lines, 0
		},
	}
}

// preview is the beginning of an item's diff for a Note, at most n lines, ending with a
// pointer to the pager when cut.
func (r *reviewer) preview(it *review.Item, hunk int, n int) string {
	p := r.paint.forNote()
	var lines []string
	switch {
	case hunk >= 0:
		lines = p.hunkLinesOf(it.Hunks[hunk], r.noteWidth(), it.Path)
	case len(it.Hunks) > 0:
		for _, h := range it.Hunks {
			lines = append(lines, p.hunkLinesOf(h, r.noteWidth(), it.Path)...)
		}
	default:
		lines, _ = p.itemDoc(it, r.noteWidth())
	}
	if !r.accessible && len(lines) > n {
		n = max(n, 2)
		more := len(lines) - (n - 1)
		lines = append(lines[:n-1], p.paint([]span{{text: fmt.Sprintf("… %d more lines: press v to see everything", more), meta: true}}))
	}
	return strings.Join(lines, "\n")
}

func (r *reviewer) nothingToApply(refused []*review.Item) error {
	if len(refused) == 0 {
		return nil
	}
	ok := true
	limit := 0
	if !r.accessible {
		limit = max(3, r.height()-12)
	}
	f := r.form(summaryLine(r.cs.Summary()),
		huh.NewNote().Title("Refused (never applied)").Description(r.refusedLines(refused, limit)),
		huh.NewConfirm().Title("Nothing can be applied.").Affirmative("OK").Negative("").Value(&ok),
	)
	return r.runForm(f, nil)
}

// form builds a one-group form titled title. huh's accessible mode does not print group
// titles, so there the title becomes a Note in front.
func (r *reviewer) form(title string, fields ...huh.Field) *huh.Form {
	if r.accessible {
		fields = append([]huh.Field{huh.NewNote().Title(title)}, fields...)
		return huh.NewForm(huh.NewGroup(fields...))
	}
	return huh.NewForm(huh.NewGroup(fields...).Title(truncate(title, r.width()-2)))
}

// vHint is a hint about the "v" key, which only the full-screen UI has.
func (r *reviewer) vHint(s string) string {
	if r.accessible {
		return ""
	}
	return s
}

func (r *reviewer) height() int {
	_, h := r.size()
	return h
}
