package review

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/cancelreader"
	"golang.org/x/term"
)

// TUIOptions tune the review TUI.
type TUIOptions struct {
	Accessible    bool // huh's accessible mode (screen readers): plain prompts, no full-screen UI
	Width, Height int  // 0 = terminal size
}

// ErrAborted is returned when the person pressed Ctrl-C or Esc: nothing must be applied.
var ErrAborted = errors.New("review aborted: nothing was applied")

// RunTUI lets a person decide what to do with every item of cs, then shows a final
// confirmation of exactly what will be written. It returns the decisions only when the person
// confirmed; ErrAborted on Ctrl-C/Esc at any point or when they decline the confirmation.
//
// The steps: the list of files (all non-conflicting ones pre-selected; unselected ones are
// rejected, selected conflicts are resolved in step 3), then for each selected text file with
// several hunks what to do with it (all hunks, some hunks, reject, reject and revert), then
// for each selected conflict keep-host/take-guest/skip, then the confirmation (default No).
// Refused items are shown with their reason and get no decision; every other item gets one.
//
// Keys of the full-screen UI: ↑/↓ or j/k move; space or x toggle a file, ctrl+a all/none, /
// filters the list; enter goes on; y/n answer a hunk or the confirmation; v shows the whole
// diff of the file at hand (or the whole plan) in a scrollable view (↑/↓, j/k, PgUp/PgDn,
// space/b, g/G; q or enter go back); esc (unless closing the filter) or ctrl+c abort. In
// accessible mode (also when TERM=dumb) the prompts read lines: numbers, y/n; a line with
// Esc, Ctrl-C, Ctrl-D or the end of the input abort.
func RunTUI(cs *Changeset, in io.Reader, out io.Writer, opts TUIOptions) ([]Decision, error) {
	if cs == nil || len(cs.Items) == 0 {
		return []Decision{}, nil
	}
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	r := &reviewer{cs: cs, in: in, out: out, opts: opts}
	r.accessible = opts.Accessible || os.Getenv("TERM") == "dumb"
	r.keymap = huh.NewDefaultKeyMap()
	// Esc is handled by formModel (it aborts unless it closes a filter); Ctrl-C by both.
	r.keymap.Quit = key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c/esc", "abort"))
	// The selects have a handful of options: no filter (and "/" does nothing).
	r.keymap.Select.Filter.SetEnabled(false)
	r.theme = huh.ThemeCharm()
	r.paint = newPainter(lipgloss.NewRenderer(out), r.accessible)
	// huh's themes use adaptive colours: the first time one is rendered, lipgloss asks the
	// terminal for its background colour and reads the answer from the terminal, which
	// would swallow a key typed at that moment (or wait for an answer bubbletea read).
	// Ask now, before any screen is shown.
	_ = lipgloss.HasDarkBackground()
	if r.accessible {
		defer r.startAccessibleInput()()
	}
	decs, err := r.run()
	if err != nil {
		return nil, err
	}
	return decs, nil
}

type reviewer struct {
	cs         *Changeset
	in         io.Reader
	out        io.Writer
	opts       TUIOptions
	accessible bool
	acc        *accInput
	keymap     *huh.KeyMap
	theme      *huh.Theme
	paint      *painter
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

func (r *reviewer) run() ([]Decision, error) {
	var items, refused []*Item
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
		return []Decision{}, r.nothingToApply(refused)
	}
	if r.accessible {
		if err := r.offerAllDiffs(items); err != nil {
			return nil, err
		}
	}
	selected, err := r.fileList(items, refused)
	if err != nil {
		return nil, err
	}
	decs := make([]Decision, len(items))
	for i, it := range items {
		decs[i] = Decision{Path: it.Path, Action: Reject}
		if it.Conflict {
			decs[i].Action = Skip
			continue
		}
		if !selected[i] {
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
		decs[i].Action = Accept
	}
	if err := r.revertRejected(items, decs); err != nil {
		return nil, err
	}
	for i, it := range items {
		if it.Conflict && selected[i] {
			a, err := r.conflict(it)
			if err != nil {
				return nil, err
			}
			decs[i].Action = a
		}
	}
	ok, err := r.confirm(items, decs)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrAborted
	}
	return decs, nil
}

// summaryLine is "3 files changed · +12 −3 · 1 conflict · 1 refused".
func summaryLine(s Summary) string {
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
func (r *reviewer) refusedLines(refused []*Item, limit int) string {
	var lines []string
	for _, it := range refused {
		lines = append(lines, displayName(it)+": "+safe(it.Refused))
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

func (r *reviewer) itemDoc(it *Item, hunk int) *doc {
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
func (r *reviewer) preview(it *Item, hunk int, n int) string {
	p := r.paint.forNote()
	var lines []string
	switch {
	case hunk >= 0:
		lines = p.hunkLines(it.Hunks[hunk], r.noteWidth())
	case it.Text && len(it.Hunks) > 0:
		for _, h := range it.Hunks {
			lines = append(lines, p.hunkLines(h, r.noteWidth())...)
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

func (r *reviewer) nothingToApply(refused []*Item) error {
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

// offerAllDiffs (accessible mode) offers to print every diff before the file list.
func (r *reviewer) offerAllDiffs(items []*Item) error {
	show := false
	f := r.form(summaryLine(r.cs.Summary()),
		huh.NewConfirm().Title("Print the changes of every file first?").Value(&show))
	if err := r.runForm(f, nil); err != nil {
		return err
	}
	if !show {
		return nil
	}
	for _, it := range items {
		if err := r.page(*r.itemDoc(it, -1)); err != nil {
			return err
		}
	}
	return nil
}

// fileList is step 1: which items to act on.
func (r *reviewer) fileList(items, refused []*Item) ([]bool, error) {
	w, h := r.size()
	var chosen []int
	opts := make([]huh.Option[int], len(items))
	for i, it := range items {
		l := label(it)
		if !r.accessible {
			l = truncate(l, w-8)
		}
		opts[i] = huh.NewOption(l, i)
		if !it.Conflict {
			opts[i] = opts[i].Selected(true)
			chosen = append(chosen, i)
		}
	}
	desc := "space: toggle · v: view diff · enter: continue · esc: abort"
	if r.accessible {
		desc = ""
	}
	hasConflict := false
	for _, it := range items {
		hasConflict = hasConflict || it.Conflict
	}
	title := "Files to accept (unselected ones stay pending in the guest)"
	if hasConflict {
		title = "Files to accept (C: conflict, select it to resolve it next)"
	}
	ms := huh.NewMultiSelect[int]().
		Title(title).
		Description(desc).
		Options(opts...).
		Value(&chosen)
	fields := []huh.Field{ms}
	var noteLines int
	switch {
	case len(refused) > 0 && r.accessible:
		fields = []huh.Field{huh.NewNote().Title("Refused (never applied)").
			Description(r.refusedLines(refused, 0)), ms}
	case len(refused) > 0:
		noteLines = min(len(refused), max(2, h/4))
		fields = append(fields, huh.NewNote().Title("Refused (never applied)").
			Description(r.refusedLines(refused, noteLines)))
	}
	if !r.accessible {
		// Layout: group title 1, the field (title 1, description, options), the note (gap 1,
		// title 1, blank 1, lines, blank 1), blank 1, help 1; one line spare.
		descLines := lineCount(desc, w-4)
		over := 4
		if noteLines > 0 {
			over += 4 + noteLines
		}
		if avail := h - over; 1+descLines+len(items) > avail {
			ms.Height(max(4, avail))
		}
	}
	f := r.form(summaryLine(r.cs.Summary()), fields...)
	err := r.runForm(f, func() *doc {
		i, ok := ms.Hovered()
		if !ok || i < 0 || i >= len(items) {
			return nil
		}
		return r.itemDoc(items[i], -1)
	})
	if err != nil {
		return nil, err
	}
	sel := make([]bool, len(items))
	for _, i := range chosen {
		if i >= 0 && i < len(items) {
			sel[i] = true
		}
	}
	return sel, nil
}

// revertRejected asks whether files left out of the file list should also be put back to
// their staged version in the guest (default: no, they stay pending).
func (r *reviewer) revertRejected(items []*Item, decs []Decision) error {
	var opts []huh.Option[int]
	w, _ := r.size()
	for i, it := range items {
		if it.Conflict || decs[i].Action != Reject {
			continue
		}
		l := label(it)
		if !r.accessible {
			l = truncate(l, w-8)
		}
		opts = append(opts, huh.NewOption(l, i))
	}
	if len(opts) == 0 {
		return nil
	}
	var chosen []int
	ms := huh.NewMultiSelect[int]().
		Title("Also revert these rejected files in the guest? (unselected ones stay pending)").
		Description(r.vHint("space: toggle · v: view diff · enter: continue · esc: abort")).
		Options(opts...).
		Value(&chosen)
	f := r.form("Rejected files", ms)
	err := r.runForm(f, func() *doc {
		i, ok := ms.Hovered()
		if !ok || i < 0 || i >= len(items) {
			return nil
		}
		return r.itemDoc(items[i], -1)
	})
	if err != nil {
		return err
	}
	for _, i := range chosen {
		if i >= 0 && i < len(items) && decs[i].Action == Reject {
			decs[i].Action = RejectRevert
		}
	}
	return nil
}

// lineCount is how many lines s takes wrapped at width.
func lineCount(s string, width int) int {
	if s == "" {
		return 0
	}
	return max(1, (ansi.StringWidth(s)+width-1)/max(1, width))
}

// truncate cuts a plain (already sanitized) string to n cells.
func truncate(s string, n int) string { return ansi.Truncate(s, max(n, 8), "…") }

// Per-file choices.
const (
	choiceAll    = "all"
	choiceHunks  = "hunks"
	choiceView   = "view"
	choiceReject = "reject"
	choiceRevert = "revert"
)

// perFile is step 2 for a text item with several hunks.
func (r *reviewer) perFile(it *Item, idx, total int) (Decision, error) {
	n := len(it.Hunks)
	choice := choiceAll
	for {
		sel := huh.NewSelect[string]().
			Title("What should happen to this file?").
			Options(
				huh.NewOption(fmt.Sprintf("accept all %d hunks", n), choiceAll),
				huh.NewOption("choose hunks one by one", choiceHunks),
				huh.NewOption("view the whole diff", choiceView),
				huh.NewOption("reject the file (it stays pending in the guest)", choiceReject),
				huh.NewOption("reject and revert it in the guest", choiceRevert),
			).
			Value(&choice)
		// Layout: group title 1, select 6, gap 1, note (title, blank, lines, blank), blank 1,
		// help 1: 13 + lines; one line spare.
		fields := []huh.Field{sel}
		if !r.accessible {
			fields = append(fields, huh.NewNote().Title("Diff (v: scroll through all of it)").
				Description(r.preview(it, -1, r.height()-14)))
		}
		f := r.form(fmt.Sprintf("[%d/%d] %s", idx+1, total, label(it)), fields...)
		if err := r.runForm(f, func() *doc { return r.itemDoc(it, -1) }); err != nil {
			return Decision{}, err
		}
		if choice != choiceView {
			break
		}
		if err := r.page(*r.itemDoc(it, -1)); err != nil {
			return Decision{}, err
		}
		choice = choiceAll
	}
	d := Decision{Path: it.Path, Action: Accept}
	switch choice {
	case choiceReject:
		d.Action = Reject
	case choiceRevert:
		d.Action = RejectRevert
	case choiceHunks:
		mask, err := r.chooseHunks(it)
		if err != nil {
			return Decision{}, err
		}
		all, none := true, true
		for _, ok := range mask {
			all = all && ok
			none = none && !ok
		}
		switch {
		case none:
			d.Action = Reject
		case !all:
			d.Hunks = mask
		}
	}
	return d, nil
}

// chooseHunks asks accept/reject for every hunk of it.
func (r *reviewer) chooseHunks(it *Item) ([]bool, error) {
	mask := make([]bool, len(it.Hunks))
	for i := range it.Hunks {
		ok := true
		// Layout: group title 1, note (title, blank, lines, blank), gap 1, confirm (title,
		// blank, buttons), blank 1, help 1: 10 + lines; one line spare.
		note := huh.NewNote().
			Title(fmt.Sprintf("Hunk %d of %d", i+1, len(it.Hunks)) + r.vHint(" (v: the whole diff)")).
			Description(r.preview(it, i, r.height()-11))
		conf := huh.NewConfirm().
			Title(fmt.Sprintf("Accept hunk %d of %d?", i+1, len(it.Hunks))).
			Affirmative("Accept").Negative("Reject").
			Value(&ok)
		f := r.form(label(it), note, conf)
		hunk := i
		if err := r.runForm(f, func() *doc { return r.itemDoc(it, hunk) }); err != nil {
			return nil, err
		}
		mask[i] = ok
	}
	return mask, nil
}

// conflict is step 3 for one selected conflict.
func (r *reviewer) conflict(it *Item) (Action, error) {
	choice := Skip
	for {
		opts := []huh.Option[Action]{
			huh.NewOption("skip: change nothing (it stays pending)", Skip),
			huh.NewOption("keep the host's version (and copy it into the guest)", KeepHost),
			huh.NewOption("take the guest's version (overwrite the host's)", TakeGuest),
		}
		if it.Text {
			opts = append(opts, huh.NewOption("view the agent's whole diff", Action(choiceView)))
		}
		desc := "The host changed this path too since the review baseline."
		if it.Description != "" {
			desc += " " + safe(it.Description)
		}
		if !r.accessible {
			// Wrap it ourselves: huh also breaks lines at "." and "-", in the middle of names.
			desc = ansi.Wrap(desc, r.width()-4, "")
		}
		sel := huh.NewSelect[Action]().
			Title("Conflict: what should happen?").
			Description(desc).
			Options(opts...).
			Value(&choice)
		fields := []huh.Field{sel}
		if !r.accessible && it.Text {
			// Layout: group title 1, select (title 1, description, options), gap 1, note
			// (title, blank, lines, blank), blank 1, help 1; one line spare.
			descLines := strings.Count(desc, "\n") + 1
			fields = append(fields, huh.NewNote().Title("The agent's change (v: all of it)").
				Description(r.preview(it, -1, r.height()-8-descLines-len(opts))))
		}
		f := r.form(label(it), fields...)
		if err := r.runForm(f, func() *doc { return r.itemDoc(it, -1) }); err != nil {
			return "", err
		}
		if choice != Action(choiceView) {
			return choice, nil
		}
		if err := r.page(*r.itemDoc(it, -1)); err != nil {
			return "", err
		}
		choice = Skip
	}
}

// planLines are the lines of the final confirmation: what will be done, then what is left.
func planLines(items []*Item, decs []Decision) (do, left []string) {
	for i, it := range items {
		if a := action(it, decs[i]); a != "" {
			do = append(do, a)
		} else {
			left = append(left, displayName(it))
		}
	}
	return do, left
}

// confirm is step 4.
func (r *reviewer) confirm(items []*Item, decs []Decision) (bool, error) {
	do, left := planLines(items, decs)
	var lines []string
	if len(do) == 0 {
		lines = append(lines, "Nothing will be written to the host.")
	}
	lines = append(lines, do...)
	if len(left) > 0 {
		lines = append(lines, fmt.Sprintf("left pending in the guest (%d): %s", len(left), strings.Join(left, ", ")))
	}
	all := lines
	if !r.accessible {
		// Layout as in chooseHunks: 10 + lines; one line spare.
		var wrapped []string
		for _, l := range lines {
			wrapped = append(wrapped, r.paint.textLines(l, r.noteWidth())...)
		}
		lines = wrapped
		if n := r.height() - 11; len(lines) > n {
			n = max(n, 2)
			more := len(lines) - (n - 1)
			lines = append(lines[:n-1], fmt.Sprintf("… %d more lines: press v to see everything", more))
		}
	}
	ok := false
	note := huh.NewNote().Title("This is what will be done").Description(r.noteText(lines))
	conf := huh.NewConfirm().Title("Apply these changes?").
		Affirmative("Yes, apply").Negative("No, abort").Value(&ok)
	title := "Confirm"
	if r.cs.Workdir != "" {
		title = "Confirm: " + safe(r.cs.Workdir)
	}
	f := r.form(title, note, conf)
	err := r.runForm(f, func() *doc {
		return &doc{title: "What will be done", render: func(width int) ([]string, int) {
			var out []string
			for _, l := range all {
				out = append(out, r.paint.textLines(l, width)...)
			}
			return out, 0
		}}
	})
	return ok, err
}

// accInput is the input of accessible mode. huh reads each answer with a new bufio.Scanner,
// so Read returns at most one line. It aborts the review on Esc or Ctrl-C typed in a line,
// on SIGINT (Ctrl-C on a terminal in line mode), and at the end of the input.
type accInput struct {
	br      *bufio.Reader
	pending []byte
	mu      sync.Mutex
	abort   bool
}

func (a *accInput) aborted() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.abort
}

func (a *accInput) setAborted() {
	a.mu.Lock()
	a.abort = true
	a.mu.Unlock()
}

func (a *accInput) Read(p []byte) (int, error) {
	if a.aborted() {
		return 0, io.EOF
	}
	if len(a.pending) == 0 {
		line, err := a.br.ReadBytes('\n')
		if len(line) == 0 || loneEsc(line) || bytes.ContainsAny(line, "\x03\x04") {
			// The end of the input (or an error: err) before all questions were answered,
			// or Esc/Ctrl-C/Ctrl-D typed.
			_ = err
			a.setAborted()
			return 0, io.EOF
		}
		a.pending = line
	}
	n := copy(p, a.pending)
	a.pending = a.pending[n:]
	return n, nil
}

// loneEsc says whether a line holds an Esc that does not start the sequence of a cursor or
// function key (an arrow key typed by mistake is an invalid answer, not an abort).
func loneEsc(line []byte) bool {
	for i, c := range line {
		if c == 0x1b && (i+1 >= len(line) || (line[i+1] != '[' && line[i+1] != 'O')) {
			return true
		}
	}
	return false
}

// startAccessibleInput sets up r.acc; stop undoes it.
func (r *reviewer) startAccessibleInput() (stop func()) {
	src := r.in
	var cancel func() bool
	var closeFn func() error
	if f, ok := r.in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		cr, err := cancelreader.NewReader(f)
		if err == nil {
			src, cancel, closeFn = cr, cr.Cancel, cr.Close
		}
	}
	r.acc = &accInput{br: bufio.NewReader(src)}
	if cancel == nil {
		return func() {}
	}
	sig := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(sig, os.Interrupt)
	go func() {
		select {
		case <-sig:
			r.acc.setAborted()
			cancel()
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
		_ = closeFn()
	}
}
