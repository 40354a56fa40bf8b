package tui

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/x/ansi"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// The steps of a review after its summary: every diff on request, the file list, each file
// (its hunks, its conflict), reverting what was rejected, and the final confirmation.

// offerAllDiffs (accessible mode) offers to print every diff before the file list.
func (r *reviewer) offerAllDiffs(items []*review.Item) error {
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

// fileList is step 1: which items to act on, and the hunks and lines chosen of some of them
// ("h", pre: by index in items).
func (r *reviewer) fileList(items, refused []*review.Item) ([]bool, map[int]review.Decision, error) {
	w, h := r.size()
	pre := map[int]review.Decision{}
	var chosen []int
	for i, it := range items {
		if !it.Conflict {
			chosen = append(chosen, i)
		}
	}
	nav := &listNav{items: items, viewed: make([]bool, len(items)), chosen: &chosen,
		label: func(i int, viewed bool) string {
			l := label(items[i])
			if d, ok := pre[i]; ok {
				l += " · " + chosenNote(items[i], d)
			}
			if viewed {
				l += " · viewed"
			}
			if !r.accessible {
				l = truncate(l, w-8)
			}
			return l
		}}
	nav.width, nav.screenH = w, h
	nav.note = func(i int) string {
		if d, ok := pre[i]; ok {
			return " · " + chosenNote(items[i], d)
		}
		return ""
	}
	if !r.accessible {
		nav.tree = newFileTree(items)
		// A large change in several directories starts as a tree; t shows the flat list.
		nav.tree.on = len(items) > treeFrom && len(nav.tree.root.children)+min(1, len(nav.tree.root.files)) > 1
	}
	opts := nav.options()
	tlDoc := r.timelineDoc()
	desc := "space: toggle · v: view diff · "
	if tlDoc != nil {
		desc += "l: timeline · "
	}
	if r.opts.Watch != nil {
		desc += "w: blocked · "
	}
	desc += "enter: continue · esc: abort"
	if r.accessible {
		desc = ""
	}
	// Above the keys: what the agent did on the network (the Notice), then what its requests
	// carried of the session's secrets.
	head := r.opts.Notice
	if lines := review.SecretsLines(r.opts.Secrets, r.opts.Requests); len(lines) > 0 {
		head = strings.TrimPrefix(head+"\n"+strings.Join(lines, "\n"), "\n")
	}
	if head != "" {
		desc = strings.TrimSuffix(head+"\n"+desc, "\n")
	}
	if !r.accessible {
		// The progress line and its keys come first (listNav.description).
		nav.help = desc
		desc = nav.description()
	}
	hasConflict := false
	for _, it := range items {
		hasConflict = hasConflict || it.Conflict
	}
	title := "Files to accept (unselected ones stay pending in the guest)"
	if hasConflict {
		title = "Files to accept (C: conflict, select it to resolve it next)"
	}
	// The theme first (huh builds a whole theme for each option it draws without one) and the
	// selection through the list's accessor (listsel.go); the height is set below, before
	// the options are given.
	ms := huh.NewMultiSelect[int]().
		Title(title).
		Description(desc)
	ms.WithTheme(r.theme)
	nav.ms = ms
	ms.Accessor(nav.accessor())
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
	if r.accessible && head != "" {
		// huh's accessible mode prints no field's description: the notice is a note of its own.
		fields = append([]huh.Field{huh.NewNote().Title(head)}, fields...)
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
		// The same, for the tree's rows as they come and go (filetree.go).
		nav.height = func() int {
			descLines := 0
			for _, l := range strings.Split(nav.description(), "\n") {
				descLines += lineCount(l, w-4)
			}
			want := 1 + descLines + len(nav.order)
			if avail := h - over; want > avail {
				return max(4, avail)
			}
			return want
		}
	}
	ms.Options(opts...)
	f := r.form(summaryLine(r.cs.Summary()), fields...)
	if r.accessible {
		nav = nil
	}
	var keys map[string]formKey
	if nav != nil {
		keys = map[string]formKey{"h": {
			ok:  func() bool { return nav.hunksOK() },
			run: func() error { return r.hunksFromList(nav, pre) },
		}}
		if tlDoc != nil {
			keys["l"] = formKey{run: func() error { return r.page(*tlDoc) }}
		}
		keys["w"] = formKey{run: r.watchBlocked}
	}
	err := r.runFormKeys(f, func() *doc {
		i, ok := ms.Hovered()
		if !ok || i < 0 || i >= len(items) {
			return nil
		}
		if nav != nil && !nav.viewed[i] {
			// Seen: marked viewed when the list comes back.
			nav.viewed[i] = true
			nav.relabel(i)
		}
		return r.itemDoc(items[i], -1)
	}, nav, keys)
	if err != nil {
		return nil, nil, err
	}
	if nav != nil {
		chosen = nav.selected() // also of the files in folded directories
	}
	sel := make([]bool, len(items))
	for _, i := range chosen {
		if i >= 0 && i < len(items) {
			sel[i] = true
		}
	}
	return sel, pre, nil
}

// revertRejected asks whether files left out of the file list should also be put back to
// their staged version in the guest (default: no, they stay pending).
func (r *reviewer) revertRejected(items []*review.Item, decs []review.Decision) error {
	var opts []huh.Option[int]
	w, _ := r.size()
	for i, it := range items {
		if it.Conflict || it.From != nil || decs[i].Action != review.Reject {
			continue // a rename is not reverted in the guest
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
	desc := "Permanent: the agent's version is lost (--undo cannot bring it back)."
	if hint := r.vHint("space: toggle · v: view diff · enter: continue · esc: abort"); hint != "" {
		desc += "\n" + hint
	}
	ms := huh.NewMultiSelect[int]().
		Title("Also revert these rejected files in the guest? (unselected ones stay pending)").
		Description(desc).
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
		if i >= 0 && i < len(items) && decs[i].Action == review.Reject {
			decs[i].Action = review.RejectRevert
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
func (r *reviewer) perFile(it *review.Item, idx, total int) (review.Decision, error) {
	n := len(it.Hunks)
	choice := choiceAll
	for {
		opts := []huh.Option[string]{
			huh.NewOption(fmt.Sprintf("accept all %d hunks", n), choiceAll),
			huh.NewOption("choose hunks one by one", choiceHunks),
			huh.NewOption("view the whole diff", choiceView),
			huh.NewOption("reject the file (it stays pending in the guest)", choiceReject),
		}
		if it.From == nil { // a rename is not reverted in the guest
			opts = append(opts, huh.NewOption("reject and revert it in the guest (permanent: no undo)", choiceRevert))
		}
		sel := huh.NewSelect[string]().
			Title("What should happen to this file?").
			Options(opts...).
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
			return review.Decision{}, err
		}
		if choice != choiceView {
			break
		}
		if err := r.page(*r.itemDoc(it, -1)); err != nil {
			return review.Decision{}, err
		}
		choice = choiceAll
	}
	d := review.Decision{Path: it.Path, Action: review.Accept}
	switch choice {
	case choiceReject:
		d.Action = review.Reject
	case choiceRevert:
		d.Action = review.RejectRevert
	case choiceHunks:
		mask, lines, err := r.chooseHunks(it, func(h int) hunkQuestion { return reviewHunk(it, h) })
		if err != nil {
			return review.Decision{}, err
		}
		d = hunksDecision(it, mask, lines)
	}
	return d, nil
}

// hunkQuestion is how the question of one hunk reads: a review's "Accept hunk 1 of 3?"
// (Accept or Reject, Accept first), a compare's "Take hunk 1 of 3 of try2?" (Take or Leave,
// Leave first).
type hunkQuestion struct {
	group   string // the form's title
	heading string // the hunk's: "Hunk 1 of 3"
	title   string // the question
	yes, no string
	take    bool // the answer the question starts on
}

// reviewHunk is a review's question of hunk h of it.
func reviewHunk(it *review.Item, h int) hunkQuestion {
	return hunkQuestion{group: label(it), heading: fmt.Sprintf("Hunk %d of %d", h+1, len(it.Hunks)),
		title: fmt.Sprintf("Accept hunk %d of %d?", h+1, len(it.Hunks)), yes: "Accept", no: "Reject", take: true}
}

// chooseHunks asks, for every hunk of it, whether to take it (ask says how the question
// reads); "s" splits a hunk into its lines (chooseLines). lines is nil unless some hunk was
// split and only some of its lines taken. A review and a compare choose hunks and lines by it.
func (r *reviewer) chooseHunks(it *review.Item, ask func(h int) hunkQuestion) (mask []bool, lines [][]bool, err error) {
	mask = make([]bool, len(it.Hunks))
	for i := range it.Hunks {
		ok, split, err := r.chooseHunk(it, i, ask(i))
		if err != nil {
			return nil, nil, err
		}
		mask[i] = ok
		if split != nil {
			if lines == nil {
				lines = make([][]bool, len(it.Hunks))
			}
			lines[i] = split
		}
	}
	return mask, lines, nil
}

// chooseHunk asks whether to take hunk h of it: ok says something of it is taken, split
// the lines taken when only some were ("s", chooseLines; nil otherwise).
func (r *reviewer) chooseHunk(it *review.Item, h int, q hunkQuestion) (ok bool, split []bool, err error) {
	if r.accessible {
		// No keys here: take, leave or split is one question (acclines.go).
		return r.accessibleHunk(it, h, q)
	}
	ok = q.take
	// Layout: group title 1, note (title, blank, lines, blank), gap 1, confirm (title,
	// blank, buttons), blank 1, help 1: 10 + lines; one line spare.
	note := huh.NewNote().
		Title(q.heading + r.vHint(" (v: the whole diff · s: split into lines)")).
		Description(r.preview(it, h, r.height()-11))
	conf := huh.NewConfirm().
		Title(q.title).
		Affirmative(q.yes).Negative(q.no).
		Value(&ok)
	f := r.form(q.group, note, conf)
	keys := map[string]formKey{"s": {run: func() error {
		var err error
		split, err = r.chooseLines(it, h, q)
		if err == nil {
			// Chosen: the form is done (huh has no call to complete it; the keys do).
			err = errLinesChosen
		}
		return err
	}}}
	err = r.runFormKeys(f, func() *doc { return r.itemDoc(it, h) }, nil, keys)
	switch {
	case errors.Is(err, errLinesChosen):
		ok, some := linesVerdict(it.Hunks[h], split)
		if !some {
			split = nil
		}
		return ok, split, nil
	case err != nil:
		return false, nil, err
	}
	return ok, nil, nil
}

// conflict is step 3 for one selected conflict.
func (r *reviewer) conflict(it *review.Item) (review.Action, error) {
	choice := review.Skip
	for {
		opts := []huh.Option[review.Action]{
			huh.NewOption("skip: change nothing (it stays pending)", review.Skip),
			huh.NewOption("keep the host's version (and copy it into the guest)", review.KeepHost),
			huh.NewOption("take the guest's version (overwrite the host's)", review.TakeGuest),
		}
		if it.From != nil {
			// A rename: the host's version is kept by skipping; the guest's renames it.
			opts = []huh.Option[review.Action]{
				huh.NewOption("skip: change nothing (it stays pending)", review.Skip),
				huh.NewOption("take the guest's version (rename "+displayName(it.From)+" and overwrite it)", review.TakeGuest),
			}
		}
		if it.Text {
			opts = append(opts, huh.NewOption("view the agent's whole diff", review.Action(choiceView)))
		}
		desc := "The host changed this path too since the review baseline."
		if it.Description != "" {
			desc += " " + termsafe.String(it.Description)
		}
		if !r.accessible {
			// Wrap it ourselves: huh also breaks lines at "." and "-", in the middle of names.
			desc = ansi.Wrap(desc, r.width()-4, "")
		}
		sel := huh.NewSelect[review.Action]().
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
		if choice != review.Action(choiceView) {
			return choice, nil
		}
		if err := r.page(*r.itemDoc(it, -1)); err != nil {
			return "", err
		}
		choice = review.Skip
	}
}

// collision is step 3 for the names of a collision (guest names that are one name on the
// host): the person takes at most one; the others stay pending in the guest. Every name of it
// in items gets its decision, and is settled.
func (r *reviewer) collision(items []*review.Item, at int, decs []review.Decision, settled map[string]bool) error {
	it := items[at]
	names := map[string]bool{it.Path: true}
	for _, o := range it.Collides {
		names[o] = true
	}
	var members []int
	for i, x := range items {
		if names[x.Path] {
			members = append(members, i)
			settled[x.Path] = true
		}
	}
	var shown []string
	for n := range names {
		shown = append(shown, termsafe.Path(n))
	}
	sort.Strings(shown)
	const none = -1
	choice := none
	for {
		opts := []huh.Option[int]{huh.NewOption("skip: take none of them (all stay pending)", none)}
		for _, i := range members {
			x := items[i]
			l := "take " + displayName(x)
			if x.From != nil {
				l += " (renames the host's " + displayName(x.From) + ")"
			}
			if x.HostChanged() {
				l += ", overwriting the host's changes"
			}
			if !r.accessible {
				l = truncate(l, r.width()-8)
			}
			opts = append(opts, huh.NewOption(l, i))
		}
		opts = append(opts, huh.NewOption("view what the agent did to each", choiceViewAll))
		desc := strings.Join(shown, " and ") + " are one name on this host directory (it does not tell case or Unicode normalization apart): at most one can be applied; the others stay pending in the guest."
		if !r.accessible {
			desc = ansi.Wrap(desc, r.width()-4, "")
		}
		sel := huh.NewSelect[int]().
			Title("Collision: which one should the host get?").
			Description(desc).
			Options(opts...).
			Value(&choice)
		f := r.form("Collision: "+strings.Join(shown, " and "), sel)
		if err := r.runForm(f, func() *doc { return r.collisionDoc(items, members) }); err != nil {
			return err
		}
		if choice != choiceViewAll {
			break
		}
		if err := r.page(*r.collisionDoc(items, members)); err != nil {
			return err
		}
		choice = none
	}
	for _, i := range members {
		decs[i].Action = review.Skip
		if i == choice {
			decs[i].Action = review.TakeGuest
		}
	}
	return nil
}

// choiceViewAll is the collision's option to see every name's change.
const choiceViewAll = -2

// collisionDoc is what the agent did to each name of a collision.
func (r *reviewer) collisionDoc(items []*review.Item, members []int) *doc {
	return &doc{title: "Collision", render: func(width int) ([]string, int) {
		var out []string
		for _, i := range members {
			if len(out) > 0 {
				out = append(out, "")
			}
			out = append(out, r.paint.textLines("── "+label(items[i]), width)...)
			lines, _ := r.paint.itemDoc(items[i], width)
			out = append(out, lines...)
		}
		return out, 0
	}}
}

// planLines are the lines of the final confirmation, from review.Plan (what apply will do):
// what will be done, then what is left.
func (r *reviewer) planLines(decs []review.Decision) (do, left []string, err error) {
	planned, err := review.Plan(r.cs, decs)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range planned {
		if p.Pending {
			left = append(left, termsafe.String(p.Path))
		} else {
			do = append(do, termsafe.String(p.Sentence))
		}
	}
	return do, left, nil
}

// confirm is step 4.
func (r *reviewer) confirm(decs []review.Decision) (bool, error) {
	do, left, err := r.planLines(decs)
	if err != nil {
		return false, err
	}
	var lines []string
	if len(do) == 0 {
		lines = append(lines, "Nothing will be written to the host.")
	}
	lines = append(lines, do...)
	for _, d := range decs {
		if d.Action == review.RejectRevert {
			lines = append(lines, "Reverting in the guest is permanent: the agent's version is lost (--undo cannot bring it back).")
			break
		}
	}
	if len(left) > 0 {
		lines = append(lines, fmt.Sprintf("left pending in the guest (%d): %s", len(left), strings.Join(left, ", ")))
	}
	all := lines
	lines = r.confirmLines(lines)
	ok := false
	note := huh.NewNote().Title("This is what will be done").Description(r.noteText(lines))
	conf := huh.NewConfirm().Title("Apply these changes?").
		Affirmative("Yes, apply").Negative("No, abort").Value(&ok)
	title := "Confirm"
	if r.cs.Workdir != "" {
		title = "Confirm: " + termsafe.String(r.cs.Workdir)
	}
	f := r.form(title, note, conf)
	err = r.runForm(f, func() *doc {
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

// confirmLines lays out a confirmation's lines for the full-screen form: wrapped to the note's
// width and cut to the screen (10 lines of form around them, one spare) with a line saying
// how to see the rest. Accessible mode prints them as they are.
func (r *reviewer) confirmLines(lines []string) []string {
	if r.accessible {
		return lines
	}
	var wrapped []string
	for _, l := range lines {
		wrapped = append(wrapped, r.paint.textLines(l, r.noteWidth())...)
	}
	if n := r.height() - 11; len(wrapped) > n {
		n = max(n, 2)
		more := len(wrapped) - (n - 1)
		wrapped = append(wrapped[:n-1], fmt.Sprintf("… %d more lines: press v to see everything", more))
	}
	return wrapped
}
