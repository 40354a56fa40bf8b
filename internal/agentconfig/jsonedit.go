package agentconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// This file edits a JSON(C) document in place: it splices new text into the spans found by
// jsondoc.go, so everything it does not mean to change stays byte for byte as it was.
//
// Why not github.com/tailscale/hujson (checked at v0.0.0-20260727124030-b80ff77dac4f): its
// parser reads JWCC, not what the clients read, and moving onto it would change which files are
// refused and what the refusal says:
//   - it refuses JSONC files Gemini CLI (strip-json-comments) reads: a // comment on the last
//     line with no newline after it ("{\"a\": 1} // e": "parsing comment: unexpected EOF"), a
//     line comment holding U+2028 or U+2029, a comment holding invalid UTF-8;
//   - it accepts what JSON.parse refuses: trailing commas ("{\"a\": 1,}"), and comments in the
//     strict JSON of .mcp.json and Cursor's files;
//   - its errors differ in text and sometimes in column: for {"a": 01} it says "line 1,
//     column 7: invalid literal: 01" where this parser says "line 1, column 8: expected ',' or
//     '}' in an object";
//   - it has no nesting bound (maxJSONDepth), and no layout-following insertion (its Patch adds
//     members without the file's indentation), so the splicing here would stay anyway.
// Checking all that around it would mean a second scanner of our own, so the parser stays.

// orderedObject is a JSON object whose members are written in this order.
type orderedObject []keyValue

type keyValue struct {
	Key   string
	Value any
}

// jsonDoc is a JSON object document being edited.
type jsonDoc struct {
	src      []byte
	comments bool
	root     *jsonNode
	nl       string // the file's line ending
	unit     string // the file's indentation step
}

// newJSONDoc parses src, which must hold a JSON object. An empty (or all-blank) src counts as {}.
func newJSONDoc(src []byte, comments bool) (*jsonDoc, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		src = []byte("{}")
	}
	root, err := parseJSONDocument(src, comments)
	if err != nil {
		return nil, err
	}
	if root.kind != jsonObjectKind {
		return nil, fmt.Errorf("the top level is %s, not an object", root.kind)
	}
	d := &jsonDoc{src: src, comments: comments, root: root, nl: "\n", unit: "  "}
	if bytes.Contains(src, []byte("\r\n")) {
		d.nl = "\r\n"
	}
	if len(root.members) > 0 && d.onOwnLine(root.members[0].start) {
		base, ind := d.lineIndent(root.start), d.lineIndent(root.members[0].start)
		if strings.HasPrefix(ind, base) && len(ind) > len(base) {
			d.unit = ind[len(base):]
		}
	}
	return d, nil
}

// lookup returns the value at path, or nil if some key on the way is missing or not an object.
func (d *jsonDoc) lookup(path []string) *jsonNode {
	n := d.root
	for _, key := range path {
		if n.kind != jsonObjectKind {
			return nil
		}
		m := n.member(key)
		if m == nil {
			return nil
		}
		n = m.value
	}
	return n
}

// plain decodes the value n as encoding/json would (numbers as json.Number).
func (d *jsonDoc) plain(n *jsonNode) (any, error) {
	return decodePlainJSON(d.src[n.start:n.end], d.comments)
}

func decodePlainJSON(src []byte, comments bool) (any, error) {
	if comments {
		src = stripJSONComments(src)
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// set makes the value at path equal value, creating missing objects on the way. A value that is
// already equal is left untouched, text and all.
func (d *jsonDoc) set(path []string, value any) error {
	obj := d.root
	for i, key := range path {
		m := obj.member(key)
		if m == nil {
			v := value
			for j := len(path) - 1; j > i; j-- {
				v = orderedObject{{path[j], v}}
			}
			return d.insertMembers(obj, orderedObject{{key, v}})
		}
		if i == len(path)-1 {
			cur, err := d.plain(m.value)
			if err != nil {
				return err
			}
			if reflect.DeepEqual(cur, plainValue(value)) {
				return nil
			}
			return d.replace(obj, m.value, value)
		}
		if m.value.kind != jsonObjectKind {
			return fmt.Errorf("%s is %s, not an object", strings.Join(path[:i+1], "."), m.value.kind)
		}
		obj = m.value
	}
	return nil
}

// addToList appends to the array at path those of items it does not hold yet, creating the array
// (and objects on the way) if missing.
func (d *jsonDoc) addToList(path []string, items []string) error {
	arr := d.lookup(path)
	if arr == nil {
		return d.set(path, stringsToAny(items))
	}
	if arr.kind != jsonArrayKind {
		return fmt.Errorf("%s is %s, not an array", strings.Join(path, "."), arr.kind)
	}
	have := map[string]bool{}
	for _, it := range arr.items {
		if it.kind == jsonStringKind {
			v, err := d.plain(it)
			if err != nil {
				return err
			}
			have[v.(string)] = true
		}
	}
	var missing []any
	for _, s := range items {
		if !have[s] {
			have[s] = true
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return d.insertChildren(arr, func(indent string, compact bool) []string {
		parts := make([]string, len(missing))
		for i, v := range missing {
			parts[i] = d.render(v, indent, compact)
		}
		return parts
	})
}

func (d *jsonDoc) insertMembers(obj *jsonNode, members orderedObject) error {
	return d.insertChildren(obj, func(indent string, compact bool) []string {
		parts := make([]string, len(members))
		for i, kv := range members {
			parts[i] = quoteJSON(kv.Key) + ": " + d.render(kv.Value, indent, compact)
		}
		return parts
	})
}

// insertChildren adds rendered children at the end of an object or array, following the layout
// of the children already there: one per line at their indentation, or inline after them.
func (d *jsonDoc) insertChildren(c *jsonNode, render func(indent string, compact bool) []string) error {
	open, closing := c.start, c.end-1
	var lastStart, lastEnd int
	switch {
	case len(c.members) > 0:
		last := c.members[len(c.members)-1]
		lastStart, lastEnd = last.start, last.value.end
	case len(c.items) > 0:
		last := c.items[len(c.items)-1]
		lastStart, lastEnd = last.start, last.end
	default:
		base := d.lineIndent(c.start)
		indent := base + d.unit
		body := d.nl + indent + strings.Join(render(indent, false), ","+d.nl+indent)
		if len(bytes.TrimSpace(d.src[open+1:closing])) == 0 {
			return d.splice(open+1, closing, body+d.nl+base)
		}
		// Only comments inside: keep them after the new children.
		return d.splice(open+1, open+1, body)
	}
	if !d.onOwnLine(lastStart) {
		return d.splice(lastEnd, lastEnd, ", "+strings.Join(render("", true), ", "))
	}
	indent := d.lineIndent(lastStart)
	body := d.nl + indent + strings.Join(render(indent, false), ","+d.nl+indent)
	at := d.afterSameLineComment(lastEnd)
	out := make([]byte, 0, len(d.src)+len(body)+1)
	out = append(out, d.src[:lastEnd]...)
	out = append(out, ',')
	out = append(out, d.src[lastEnd:at]...)
	out = append(out, body...)
	out = append(out, d.src[at:]...)
	return d.reparse(out)
}

// replace writes value over the value node n, a child of container: on one line if the container
// is on one line or n was a non-empty array or object written on one line, else laid out.
func (d *jsonDoc) replace(container, n *jsonNode, value any) error {
	oneLine := func(n *jsonNode) bool { return !bytes.Contains(d.src[n.start:n.end], []byte("\n")) }
	compact := oneLine(container) || (oneLine(n) && (len(n.items) > 0 || len(n.members) > 0))
	return d.splice(n.start, n.end, d.render(value, d.lineIndent(n.start), compact))
}

func (d *jsonDoc) splice(from, to int, text string) error {
	out := make([]byte, 0, len(d.src)-(to-from)+len(text))
	out = append(out, d.src[:from]...)
	out = append(out, text...)
	out = append(out, d.src[to:]...)
	return d.reparse(out)
}

func (d *jsonDoc) reparse(src []byte) error {
	root, err := parseJSONDocument(src, d.comments)
	if err != nil {
		return fmt.Errorf("internal error: an edit made the file unparseable: %w", err)
	}
	d.src, d.root = src, root
	return nil
}

func (d *jsonDoc) lineStart(pos int) int {
	return bytes.LastIndexByte(d.src[:pos], '\n') + 1
}

// lineIndent is the run of blanks that begins the line holding pos.
func (d *jsonDoc) lineIndent(pos int) string {
	start := d.lineStart(pos)
	end := start
	for end < len(d.src) && (d.src[end] == ' ' || d.src[end] == '\t') {
		end++
	}
	return string(d.src[start:end])
}

// onOwnLine says whether only blanks come before pos on its line.
func (d *jsonDoc) onOwnLine(pos int) bool {
	return len(bytes.Trim(d.src[d.lineStart(pos):pos], " \t")) == 0
}

// afterSameLineComment returns the end of a comment that follows pos on the same line, or pos.
func (d *jsonDoc) afterSameLineComment(pos int) int {
	if !d.comments {
		return pos
	}
	i := pos
	for i < len(d.src) && (d.src[i] == ' ' || d.src[i] == '\t') {
		i++
	}
	switch {
	case bytes.HasPrefix(d.src[i:], []byte("//")):
		end := bytes.IndexByte(d.src[i:], '\n')
		if end < 0 {
			return len(d.src)
		}
		end += i
		if end > i && d.src[end-1] == '\r' {
			end--
		}
		return end
	case bytes.HasPrefix(d.src[i:], []byte("/*")):
		end := indexFrom(d.src, "*/", i+2)
		if end >= 0 && !bytes.Contains(d.src[i:end], []byte("\n")) {
			return end + 2
		}
	}
	return pos
}

// render writes v as JSON: compact on one line, or laid out like JSON.stringify(v, null, unit)
// with its closing bracket at indent.
func (d *jsonDoc) render(v any, indent string, compact bool) string {
	switch v := v.(type) {
	case []string:
		return d.render(stringsToAny(v), indent, compact)
	case []any:
		if len(v) == 0 {
			return "[]"
		}
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = d.render(e, indent+d.unit, compact)
		}
		if compact {
			return "[" + strings.Join(parts, ", ") + "]"
		}
		inner := indent + d.unit
		return "[" + d.nl + inner + strings.Join(parts, ","+d.nl+inner) + d.nl + indent + "]"
	case orderedObject:
		if len(v) == 0 {
			return "{}"
		}
		parts := make([]string, len(v))
		for i, kv := range v {
			parts[i] = quoteJSON(kv.Key) + ": " + d.render(kv.Value, indent+d.unit, compact)
		}
		if compact {
			return "{" + strings.Join(parts, ", ") + "}"
		}
		inner := indent + d.unit
		return "{" + d.nl + inner + strings.Join(parts, ","+d.nl+inner) + d.nl + indent + "}"
	default:
		b, err := marshalJSON(v)
		if err != nil {
			panic(fmt.Sprintf("agentconfig: cannot render %T: %v", v, err))
		}
		return string(b)
	}
}

// quoteJSON writes s as a JSON string, leaving <, > and & as they are (as JSON.stringify does).
func quoteJSON(s string) string {
	b, err := marshalJSON(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}

func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func stringsToAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// plainValue turns a value made of orderedObject, []string and scalars into what encoding/json
// decodes the same JSON into, for comparisons.
func plainValue(v any) any {
	switch v := v.(type) {
	case orderedObject:
		m := make(map[string]any, len(v))
		for _, kv := range v {
			m[kv.Key] = plainValue(kv.Value)
		}
		return m
	case []string:
		return stringsToAny(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plainValue(e)
		}
		return out
	default:
		return v
	}
}
