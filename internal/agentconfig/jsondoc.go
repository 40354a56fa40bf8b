package agentconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// This file parses JSON while remembering where every value sits in the text, so that edits can
// touch only the bytes they mean to change and leave the user's formatting, key order and (in
// JSONC files) comments alone.

type jsonKind int

const (
	jsonObjectKind jsonKind = iota
	jsonArrayKind
	jsonStringKind
	jsonNumberKind
	jsonLiteralKind // true, false, null
)

func (k jsonKind) String() string {
	switch k {
	case jsonObjectKind:
		return "an object"
	case jsonArrayKind:
		return "an array"
	case jsonStringKind:
		return "a string"
	case jsonNumberKind:
		return "a number"
	default:
		return "a literal"
	}
}

// jsonNode is one value of a parsed document: its kind and its byte span [start, end).
type jsonNode struct {
	kind       jsonKind
	start, end int
	members    []*jsonMember // objects, in document order
	items      []*jsonNode   // arrays, in document order
}

// jsonMember is one "key": value pair of an object; start is the offset of the key's quote.
type jsonMember struct {
	key   string
	start int
	value *jsonNode
}

// member returns the member with the given key. JSON.parse and encoding/json let the last of
// duplicate keys win, so this does too.
func (n *jsonNode) member(key string) *jsonMember {
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return n.members[i]
		}
	}
	return nil
}

// jsonSyntaxError locates a parse error for the user.
type jsonSyntaxError struct {
	Line, Column int
	Msg          string
}

func (e *jsonSyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// maxJSONDepth bounds nesting so a hostile file cannot exhaust the stack.
const maxJSONDepth = 1000

type jsonParser struct {
	src      []byte
	pos      int
	comments bool // accept // and /* */ comments (JSONC, as Gemini CLI does)
	depth    int
}

// parseJSONDocument parses src as one JSON value. With comments set it also accepts // and /* */
// comments wherever whitespace may appear (but not trailing commas, which JSON.parse rejects even
// after strip-json-comments has run).
func parseJSONDocument(src []byte, comments bool) (*jsonNode, error) {
	p := &jsonParser{src: src, comments: comments}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.pos >= len(p.src) {
		return nil, p.errorf("the file has no JSON value")
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.pos < len(p.src) {
		return nil, p.errorf("unexpected %q after the JSON value", p.src[p.pos])
	}
	return v, nil
}

func (p *jsonParser) errorf(format string, args ...any) error {
	line, col := 1, 1
	for i := 0; i < p.pos && i < len(p.src); i++ {
		if p.src[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return &jsonSyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *jsonParser) skipSpace() error {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.comments && p.pos+1 < len(p.src) && p.src[p.pos+1] == '/':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == '/' && p.comments && p.pos+1 < len(p.src) && p.src[p.pos+1] == '*':
			end := indexFrom(p.src, "*/", p.pos+2)
			if end < 0 {
				return p.errorf("unterminated /* comment")
			}
			p.pos = end + 2
		default:
			return nil
		}
	}
	return nil
}

// indexFrom is bytes.Index from offset from on (from <= len(b)), as an offset into b.
func indexFrom(b []byte, sep string, from int) int {
	if i := bytes.Index(b[from:], []byte(sep)); i >= 0 {
		return from + i
	}
	return -1
}

func (p *jsonParser) value() (*jsonNode, error) {
	if p.pos >= len(p.src) {
		return nil, p.errorf("unexpected end of file")
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		start := p.pos
		if _, err := p.str(); err != nil {
			return nil, err
		}
		return &jsonNode{kind: jsonStringKind, start: start, end: p.pos}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	default:
		return nil, p.errorf("unexpected %q", c)
	}
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return p.errorf("nested more than %d levels deep", maxJSONDepth)
	}
	return nil
}

func (p *jsonParser) object() (*jsonNode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	n := &jsonNode{kind: jsonObjectKind, start: p.pos}
	p.pos++ // {
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	for {
		if p.pos < len(p.src) && p.src[p.pos] == '}' && len(n.members) > 0 {
			return nil, p.errorf("a comma before '}' (JSON allows no trailing comma)")
		}
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return nil, p.errorf("expected a quoted key")
		}
		keyStart := p.pos
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, p.errorf("expected ':' after key %q", key)
		}
		p.pos++
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, &jsonMember{key: key, start: keyStart, value: v})
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) {
			return nil, p.errorf("unexpected end of file in an object")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
			if err := p.skipSpace(); err != nil {
				return nil, err
			}
		case '}':
			p.pos++
			n.end = p.pos
			return n, nil
		default:
			return nil, p.errorf("expected ',' or '}' in an object")
		}
	}
}

func (p *jsonParser) array() (*jsonNode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	n := &jsonNode{kind: jsonArrayKind, start: p.pos}
	p.pos++ // [
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	for {
		if p.pos < len(p.src) && p.src[p.pos] == ']' && len(n.items) > 0 {
			return nil, p.errorf("a comma before ']' (JSON allows no trailing comma)")
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, v)
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) {
			return nil, p.errorf("unexpected end of file in an array")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
			if err := p.skipSpace(); err != nil {
				return nil, err
			}
		case ']':
			p.pos++
			n.end = p.pos
			return n, nil
		default:
			return nil, p.errorf("expected ',' or ']' in an array")
		}
	}
}

// str scans a string token at p.pos and returns its decoded value.
func (p *jsonParser) str() (string, error) {
	start := p.pos
	i := p.pos + 1
	for ; i < len(p.src); i++ {
		switch p.src[i] {
		case '\\':
			i++
		case '"':
			var s string
			if err := json.Unmarshal(p.src[start:i+1], &s); err != nil {
				return "", p.errorf("invalid string: %v", err)
			}
			p.pos = i + 1
			return s, nil
		case '\n':
			return "", p.errorf("newline inside a string")
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *jsonParser) number() (*jsonNode, error) {
	start := p.pos
	i := p.pos
	digits := func() int {
		n := 0
		for i < len(p.src) && p.src[i] >= '0' && p.src[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if p.src[i] == '-' {
		i++
	}
	switch {
	case i < len(p.src) && p.src[i] == '0':
		i++
	case digits() == 0:
		p.pos = i
		return nil, p.errorf("invalid number")
	}
	if i < len(p.src) && p.src[i] == '.' {
		i++
		if digits() == 0 {
			p.pos = i
			return nil, p.errorf("invalid number")
		}
	}
	if i < len(p.src) && (p.src[i] == 'e' || p.src[i] == 'E') {
		i++
		if i < len(p.src) && (p.src[i] == '+' || p.src[i] == '-') {
			i++
		}
		if digits() == 0 {
			p.pos = i
			return nil, p.errorf("invalid number")
		}
	}
	p.pos = i
	return &jsonNode{kind: jsonNumberKind, start: start, end: i}, nil
}

func (p *jsonParser) literal(word string) (*jsonNode, error) {
	if p.pos+len(word) > len(p.src) || string(p.src[p.pos:p.pos+len(word)]) != word {
		return nil, p.errorf("unexpected %q", p.src[p.pos])
	}
	n := &jsonNode{kind: jsonLiteralKind, start: p.pos, end: p.pos + len(word)}
	p.pos += len(word)
	return n, nil
}

// stripJSONComments blanks out // and /* */ comments outside strings (keeping newlines, so
// offsets and line numbers stay the same), turning JSONC into JSON.
func stripJSONComments(src []byte) []byte {
	out := make([]byte, len(src))
	copy(out, src)
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := indexFrom(out, "*/", i+2)
			if end < 0 {
				end = len(out) - 2
			}
			for j := i; j < end+2 && j < len(out); j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i = end + 1
		}
	}
	return out
}
