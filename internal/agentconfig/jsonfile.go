package agentconfig

import (
	"bytes"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
)

// jsonSyntax says which JSON a client reads.
type jsonSyntax int

const (
	strictJSON jsonSyntax = iota // JSON.parse: no comments
	jsoncJSON                    // JSON with // and /* */ comments (strip-json-comments, then JSON.parse)
)

// jsonEdit is one change to a JSON document. Each edit can be made both to the text (keeping
// everything else as it was) and to the decoded value, so the result can be checked: the edited
// text must decode to exactly the old value with the edits made to it.
type jsonEdit interface {
	editDoc(d *jsonDoc) error
	editPlain(root map[string]any) error
}

// setJSON makes the value at Path equal Value.
type setJSON struct {
	Path  []string
	Value any
}

func (e setJSON) editDoc(d *jsonDoc) error { return d.set(e.Path, e.Value) }

func (e setJSON) editPlain(root map[string]any) error {
	parent, err := plainParent(root, e.Path)
	if err != nil {
		return err
	}
	parent[e.Path[len(e.Path)-1]] = plainValue(e.Value)
	return nil
}

// addToJSONList adds to the array at Path the Items it lacks.
type addToJSONList struct {
	Path  []string
	Items []string
}

func (e addToJSONList) editDoc(d *jsonDoc) error { return d.addToList(e.Path, e.Items) }

func (e addToJSONList) editPlain(root map[string]any) error {
	parent, err := plainParent(root, e.Path)
	if err != nil {
		return err
	}
	key := e.Path[len(e.Path)-1]
	list, _ := parent[key].([]any)
	if _, exists := parent[key]; exists && list == nil {
		return fmt.Errorf("%s is not an array", strings.Join(e.Path, "."))
	}
	have := map[string]bool{}
	for _, v := range list {
		if s, ok := v.(string); ok {
			have[s] = true
		}
	}
	for _, s := range e.Items {
		if !have[s] {
			have[s] = true
			list = append(list, s)
		}
	}
	parent[key] = list
	return nil
}

// plainParent returns the object that holds the last key of path, creating objects on the way.
func plainParent(root map[string]any, path []string) (map[string]any, error) {
	m := root
	for i, key := range path[:len(path)-1] {
		next, exists := m[key]
		if !exists {
			child := map[string]any{}
			m[key] = child
			m = child
			continue
		}
		child, ok := next.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", strings.Join(path[:i+1], "."))
		}
		m = child
	}
	return m, nil
}

// planJSONFile works out the edits to the JSON file at path. It refuses a file it cannot parse.
func planJSONFile(path string, syntax jsonSyntax, newMode fs.FileMode, edits ...jsonEdit) (Change, error) {
	before, err := readConfigFile(path)
	if err != nil {
		return Change{}, err
	}
	comments := syntax == jsoncJSON
	d, err := newJSONDoc(before, comments)
	if err != nil {
		what := "valid JSON"
		if comments {
			what = "valid JSON (comments allowed)"
		}
		return Change{}, fmt.Errorf("refusing to change %s: it is not %s: %v; fix it or move it away, then run again", path, what, err)
	}
	start := d.src
	want, err := decodePlainJSON(start, comments)
	if err != nil {
		return Change{}, fmt.Errorf("refusing to change %s: %v", path, err)
	}
	for _, e := range edits {
		if err := e.editDoc(d); err != nil {
			return Change{}, fmt.Errorf("refusing to change %s: %v", path, err)
		}
		if err := e.editPlain(want.(map[string]any)); err != nil {
			return Change{}, fmt.Errorf("refusing to change %s: %v", path, err)
		}
	}
	c := Change{Path: path, Before: before, After: before, NewFileMode: newMode}
	if bytes.Equal(d.src, start) && before != nil {
		return c, nil
	}
	after := d.src
	if !bytes.Equal(start, before) { // a new or blank file: it gets a final newline
		after = append(after, d.nl...)
	}
	got, err := decodePlainJSON(after, comments)
	if err != nil || !reflect.DeepEqual(got, want) {
		return Change{}, fmt.Errorf("internal error: the edit of %s did not come out as intended (nothing was written)", path)
	}
	c.After = after
	return c, nil
}
