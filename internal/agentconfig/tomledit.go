package agentconfig

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// This file edits a TOML document in place (Codex's config.toml): it sets keys of a [table] by
// splicing lines into the text, so comments, order and layout elsewhere stay as they were.

type tomlDoc struct {
	src []byte
	nl  string
}

// tomlSection is a [table] (or [[array table]]) header and the key/values under it.
type tomlSection struct {
	path       []string
	arrayTable bool
	headerEnd  int // offset just past the header line
	kvs        []tomlKeyValue
}

type tomlKeyValue struct {
	key        []string
	start, end int // the "key = value" span
}

func newTOMLDoc(src []byte) *tomlDoc {
	d := &tomlDoc{src: src, nl: "\n"}
	if bytes.Contains(src, []byte("\r\n")) {
		d.nl = "\r\n"
	}
	return d
}

// decodeTOML decodes a whole document as go-toml does for map[string]any.
func decodeTOML(src []byte) (map[string]any, error) {
	var m map[string]any
	if err := toml.Unmarshal(src, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// sections lists the document's tables in order; key/values before the first header are left out.
func (d *tomlDoc) sections() ([]tomlSection, error) {
	var p unstable.Parser
	p.Reset(d.src)
	var out []tomlSection
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			path, first := tomlKeyPath(e.Key())
			s := tomlSection{path: path, arrayTable: e.Kind == unstable.ArrayTable}
			s.headerEnd = d.lineEnd(int(first.Offset + first.Length))
			out = append(out, s)
		case unstable.KeyValue:
			if len(out) == 0 {
				continue
			}
			key, _ := tomlKeyPath(e.Key())
			s := &out[len(out)-1]
			s.kvs = append(s.kvs, tomlKeyValue{key: key, start: int(e.Raw.Offset), end: int(e.Raw.Offset + e.Raw.Length)})
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	return out, nil
}

func tomlKeyPath(it unstable.Iterator) ([]string, unstable.Range) {
	var path []string
	var last unstable.Range
	for it.Next() {
		n := it.Node()
		path = append(path, string(n.Data))
		last = n.Raw
	}
	return path, last
}

// lineEnd returns the offset just past the newline that ends the line holding pos (or the end of
// the document).
func (d *tomlDoc) lineEnd(pos int) int {
	i := bytes.IndexByte(d.src[pos:], '\n')
	if i < 0 {
		return len(d.src)
	}
	return pos + i + 1
}

// set makes key in [table] hold value. A key that already holds it is left untouched.
func (d *tomlDoc) set(table []string, key string, value any) error {
	cur, err := decodeTOML(d.src)
	if err != nil {
		return err
	}
	if v, ok := lookupPlain(cur, append(append([]string{}, table...), key)); ok && reflect.DeepEqual(v, plainValue(value)) {
		return nil
	}
	secs, err := d.sections()
	if err != nil {
		return err
	}
	line := tomlKey(key) + " = " + renderTOML(value)
	for _, s := range secs {
		if s.arrayTable || !slices.Equal(s.path, table) {
			continue
		}
		for i := len(s.kvs) - 1; i >= 0; i-- {
			if slices.Equal(s.kvs[i].key, []string{key}) {
				d.splice(s.kvs[i].start, s.kvs[i].end, line)
				return nil
			}
		}
		at := s.headerEnd
		if len(s.kvs) > 0 {
			at = d.lineEnd(s.kvs[len(s.kvs)-1].end)
		}
		d.insertLine(at, line)
		return nil
	}
	d.appendTable(table, line)
	return nil
}

func (d *tomlDoc) insertLine(at int, line string) {
	text := line + d.nl
	if at == len(d.src) && at > 0 && d.src[at-1] != '\n' {
		text = d.nl + text
	}
	d.splice(at, at, text)
}

func (d *tomlDoc) appendTable(table []string, line string) {
	var b bytes.Buffer
	b.Write(d.src)
	if b.Len() > 0 && !bytes.HasSuffix(d.src, []byte("\n")) {
		b.WriteString(d.nl)
	}
	if len(bytes.TrimSpace(d.src)) > 0 {
		b.WriteString(d.nl)
	}
	keys := make([]string, len(table))
	for i, k := range table {
		keys[i] = tomlKey(k)
	}
	b.WriteString("[" + strings.Join(keys, ".") + "]" + d.nl + line + d.nl)
	d.src = b.Bytes()
}

func (d *tomlDoc) splice(from, to int, text string) {
	out := make([]byte, 0, len(d.src)-(to-from)+len(text))
	out = append(out, d.src[:from]...)
	out = append(out, text...)
	out = append(out, d.src[to:]...)
	d.src = out
}

// lookupPlain finds the value at path in a decoded document.
func lookupPlain(m map[string]any, path []string) (any, bool) {
	var v any = m
	for _, k := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

var bareTOMLKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func tomlKey(k string) string {
	if bareTOMLKey.MatchString(k) {
		return k
	}
	return tomlString(k)
}

// renderTOML writes a string, bool or list of strings as a TOML value.
func renderTOML(v any) string {
	switch v := v.(type) {
	case string:
		return tomlString(v)
	case bool:
		if v {
			return "true"
		}
		return "false"
	case []string:
		return renderTOML(stringsToAny(v))
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = renderTOML(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		panic(fmt.Sprintf("agentconfig: cannot render %T as TOML", v))
	}
}

// tomlString writes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
