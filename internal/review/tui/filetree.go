package tui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"
	"path"
	"sort"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// The file list as a tree ("t"): a row per directory (with how many files it holds, viewed,
// conflicts, selected), its files below it by name, collapsible (← folds the directory at
// the cursor, → unfolds it). Space on a directory's row selects or leaves out every file in
// it, shown or folded. A directory that holds only one directory is one row ("src/lib/").
// Directory rows are options of huh's list whose values are negative (dirValue): they are
// never a decision.

// treeFrom is how many files a change has beyond which its list starts as a tree (when they
// are in more than one directory).
const treeFrom = 20

type fileTree struct {
	on        bool
	shown     bool // the first screen was drawn
	dirs      []*treeDir
	dirsOf    map[int][]int // item → the directories it is in (outermost first)
	itemOrder []int         // every item in the tree's order
	root      *treeDir
	indent    map[int]int // item → its depth
	// fullName are the items shown with their whole path: their file name is another
	// item's too (huh tells options apart by their labels).
	fullName map[int]bool
}

type treeDir struct {
	name      string // as the row shows it, relative to its parent ("src/lib/")
	depth     int
	items     []int // every item in it, at any depth, in the tree's order
	files     []int // its own files, by name
	children  []*treeDir
	collapsed bool
}

// dirValue is the option value of directory d's row, dirIndex the way back.
func dirValue(d int) int { return -(d + 1) }
func dirIndex(v int) int { return -v - 1 }

// newFileTree groups items by directory.
func newFileTree(items []*review.Item) *fileTree {
	type node struct {
		children map[string]*node
		files    []int
	}
	newNode := func() *node { return &node{children: map[string]*node{}} }
	top := newNode()
	for i, it := range items {
		n := top
		if dir := path.Dir(it.Path); dir != "." {
			for _, part := range strings.Split(dir, "/") {
				c := n.children[part]
				if c == nil {
					c = newNode()
					n.children[part] = c
				}
				n = c
			}
		}
		n.files = append(n.files, i)
	}
	t := &fileTree{dirsOf: map[int][]int{}, indent: map[int]int{}}
	var build func(n *node, name string, depth int, parents []int) *treeDir
	build = func(n *node, name string, depth int, parents []int) *treeDir {
		// A directory that holds only one directory is one row with it.
		for len(n.files) == 0 && len(n.children) == 1 && name != "" {
			for part, c := range n.children {
				name, n = name+part+"/", c
			}
		}
		d := &treeDir{name: name, depth: depth}
		di := -1
		if name != "" {
			di = len(t.dirs)
			t.dirs = append(t.dirs, d)
			parents = append(append([]int(nil), parents...), di)
		}
		names := make([]string, 0, len(n.children))
		for part := range n.children {
			names = append(names, part)
		}
		sort.Strings(names)
		childDepth := depth + 1
		if name == "" {
			childDepth = 0
		}
		for _, part := range names {
			c := build(n.children[part], part+"/", childDepth, parents)
			d.children = append(d.children, c)
			d.items = append(d.items, c.items...)
		}
		sort.Slice(n.files, func(a, b int) bool { return items[n.files[a]].Path < items[n.files[b]].Path })
		d.files = n.files
		for _, i := range n.files {
			d.items = append(d.items, i)
			t.dirsOf[i] = parents
			t.indent[i] = childDepth
		}
		return d
	}
	t.root = build(top, "", 0, nil)
	t.itemOrder = t.root.items
	seen := map[string][]int{}
	for i, it := range items {
		b := path.Base(it.Path)
		seen[b] = append(seen[b], i)
	}
	t.fullName = map[int]bool{}
	for _, is := range seen {
		if len(is) > 1 {
			for _, i := range is {
				t.fullName[i] = true
			}
		}
	}
	return t
}

// rows appends the values of the rows shown: directories (folded ones without what is in
// them) and files.
func (t *fileTree) rows(out []int) []int {
	var walk func(d *treeDir)
	walk = func(d *treeDir) {
		for _, c := range d.children {
			out = append(out, dirValue(t.index(c)))
			if !c.collapsed {
				walk(c)
			}
		}
		out = append(out, d.files...)
	}
	walk(t.root)
	return out
}

func (t *fileTree) index(d *treeDir) int {
	for k, x := range t.dirs {
		if x == d {
			return k
		}
	}
	return -1
}

// expandTo unfolds every directory item i is in.
func (t *fileTree) expandTo(i int) {
	for _, d := range t.dirsOf[i] {
		t.dirs[d].collapsed = false
	}
}

// dirLabel is a directory row: "▾ pkg00/  25 files · 3 viewed · 1 conflict · 24 selected".
func (t *fileTree) dirLabel(n *listNav, v int, sel map[int]bool) string {
	d := t.dirs[dirIndex(v)]
	mark := "▾ "
	if d.collapsed {
		mark = "▸ "
	}
	viewed, conflicts, selected := 0, 0, 0
	if sel == nil {
		sel = n.selection()
	}
	for _, i := range d.items {
		if n.viewed[i] {
			viewed++
		}
		if n.items[i].Conflict {
			conflicts++
		}
		if sel[i] {
			selected++
		}
	}
	s := strings.Repeat("  ", d.depth) + mark + termsafe.String(d.name) + "  " + plural(len(d.items), "file", "files")
	if viewed > 0 {
		s += fmt.Sprintf(" · %d viewed", viewed)
	}
	if conflicts > 0 {
		s += " · " + plural(conflicts, "conflict", "conflicts")
	}
	if selected > 0 && selected < len(d.items) {
		s += fmt.Sprintf(" · %d selected", selected)
	}
	return truncate(s, n.width-8)
}

// itemLabel is a file's row: its label with the file's own name, under its directory.
func (t *fileTree) itemLabel(n *listNav, i int) string {
	it := *n.items[i]
	if dir := path.Dir(it.Path); dir != "." && !t.fullName[i] {
		it.Display = termsafe.Path(path.Base(it.Path))
	}
	s := strings.Repeat("  ", t.indent[i]) + label(&it)
	if n.note != nil {
		s += n.note(i)
	}
	if n.viewed[i] {
		s += " · viewed"
	}
	return truncate(s, n.width-8)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// treeKey handles the tree's keys in m: t shows or hides it; ← and → fold and unfold the
// directory at the cursor (← on a file folds its directory); space or x on a directory's row
// select or leave out all of its files. False when key is not one of them here.
func (m *formModel) treeKey(key string, cur int) bool {
	n := m.nav
	if n.tree == nil {
		return false
	}
	t := n.tree
	switch {
	case key == "t":
		t.on = !t.on
		m.rebuild()
		if cur < 0 && !t.on {
			cur = t.dirs[dirIndex(cur)].items[0]
		}
		m.moveTo(cur)
		return true
	case !t.on:
		return false
	case key == "left" || key == "right":
		d := -1
		switch {
		case cur < 0:
			d = dirIndex(cur)
		case key == "left" && len(t.dirsOf[cur]) > 0:
			ds := t.dirsOf[cur]
			d = ds[len(ds)-1]
		}
		if d < 0 || t.dirs[d].collapsed == (key == "left") {
			return true
		}
		t.dirs[d].collapsed = key == "left"
		m.rebuild()
		m.moveTo(dirValue(d))
		return true
	case (key == " " || key == "x") && cur < 0:
		d := t.dirs[dirIndex(cur)]
		sel := n.selection()
		all := true
		for _, i := range d.items {
			all = all && sel[i]
		}
		for _, i := range d.items {
			sel[i] = !all
		}
		var chosen []int
		for i, ok := range sel {
			if ok {
				chosen = append(chosen, i)
			}
		}
		*n.chosen, n.hiddenSel = chosen, nil
		m.rebuild()
		m.moveTo(cur)
		return true
	}
	return false
}

// rebuild gives huh the list's options anew (after the tree changed shape or selection).
func (m *formModel) rebuild() {
	n := m.nav
	n.ms.Options(n.options()...)
	n.ms.Description(n.description())
	if n.height != nil {
		n.ms.Height(n.height())
	}
	// huh sizes the form's group to its content when the window's size is known: tell it
	// again, now that the content changed.
	if f, _ := m.form.Update(tea.WindowSizeMsg{Width: n.width, Height: n.screenH}); f != nil {
		if ff, ok := f.(*huh.Form); ok {
			m.form = ff
		}
	}
}

// syncDirs shows each directory row's selection and counts as they are now (after huh
// toggled a file); true when one changed (the form must then draw again).
func (n *listNav) syncDirs() bool {
	if n.tree == nil || !n.tree.on {
		return false
	}
	sel := n.selection()
	changed := false
	for p, v := range n.order {
		if v < 0 {
			o := n.opts[p].Selected(n.rowSelected(v, sel))
			o.Key = n.tree.dirLabel(n, v, sel)
			if o.Key != n.opts[p].Key || o != n.opts[p] {
				changed = true
			}
			n.opts[p] = o
		}
	}
	return changed
}
