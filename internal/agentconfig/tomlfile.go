package agentconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// setTOML makes Key in the table Table hold Value.
type setTOML struct {
	Table []string
	Key   string
	Value any
}

// planTOMLFile works out the edits to the TOML file at path. It refuses a file it cannot parse,
// and an edit whose result would not decode to exactly the old document plus the new keys (for
// instance when the table is written inline, where a [table] header cannot extend it).
func planTOMLFile(path string, newMode fs.FileMode, sets ...setTOML) (Change, error) {
	before, err := readConfigFile(path)
	if err != nil {
		return Change{}, err
	}
	want, err := decodeTOML(before)
	if err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			err = fmt.Errorf("line %d, column %d: %s", row, col, strings.TrimPrefix(de.Error(), "toml: "))
		}
		return Change{}, fmt.Errorf("refusing to change %s: it is not valid TOML: %v; fix it or move it away, then run again", path, err)
	}
	cannot := func() error {
		var where []string
		for _, s := range sets {
			where = append(where, strings.Join(append(append([]string{}, s.Table...), s.Key), "."))
		}
		return fmt.Errorf("refusing to change %s: could not set %s without disturbing the rest of the file "+
			"(a table written inline or with dotted keys cannot be extended); edit it by hand", path, strings.Join(where, ", "))
	}
	d := newTOMLDoc(before)
	for _, s := range sets {
		if err := d.set(s.Table, s.Key, s.Value); err != nil {
			return Change{}, cannot()
		}
		parent, err := plainParent(want, append(append([]string{}, s.Table...), s.Key))
		if err != nil {
			return Change{}, fmt.Errorf("refusing to change %s: %v", path, err)
		}
		parent[s.Key] = plainTOMLValue(s.Value)
	}
	c := Change{Path: path, Before: before, After: before, NewFileMode: newMode}
	if bytes.Equal(d.src, before) && before != nil {
		return c, nil
	}
	got, err := decodeTOML(d.src)
	if err != nil || !reflect.DeepEqual(got, want) {
		return Change{}, cannot()
	}
	c.After = d.src
	return c, nil
}

// plainTOMLValue is what go-toml decodes the rendered value into.
func plainTOMLValue(v any) any {
	if s, ok := v.([]string); ok {
		return stringsToAny(s)
	}
	return v
}
