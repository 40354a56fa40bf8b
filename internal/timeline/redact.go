package timeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Redactor replaces known secret values in what the timeline writes with "[redacted]". It
// knows the values it is given (a session's secrets) and those of the host environment whose
// names say they are secret (FromEnviron). It cannot know a secret it was never told: a value
// the agent makes up, or reads in the guest and passes as an argument (docs/log.md).
type Redactor struct {
	values []string // longest first, so that a value containing another goes whole
}

// Redacted is what a secret value becomes.
const Redacted = "[redacted]"

// minSecretLen is the shortest value redacted: shorter ones would blot out ordinary words
// (and a secret that short is no secret).
const minSecretLen = 6

// secretName matches environment variable names that hold secrets by convention.
var secretName = regexp.MustCompile(`(?i)(token|secret|passw|pwd|key|credential|auth|cookie|session|private|api_?key|bearer|signature)`)

// NewRedactor redacts values (those shorter than 6 bytes are ignored).
func NewRedactor(values ...string) *Redactor {
	r := &Redactor{}
	r.Add(values...)
	return r
}

// FromEnviron returns a Redactor for the values of environ (KEY=VALUE) whose names look
// secret (TOKEN, SECRET, PASSWORD, KEY, AUTH, ...), plus extra.
func FromEnviron(environ []string, extra ...string) *Redactor {
	r := NewRedactor(extra...)
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && secretName.MatchString(k) {
			r.Add(v)
		}
	}
	return r
}

// Add adds values to redact.
func (r *Redactor) Add(values ...string) {
	for _, v := range values {
		if len(v) >= minSecretLen {
			r.values = append(r.values, v)
		}
	}
	sort.Slice(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
}

// String redacts s.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	for _, v := range r.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}

// Value redacts every string of a decoded JSON value (maps, slices, strings).
func (r *Redactor) Value(v any) any {
	if r == nil {
		return v
	}
	switch x := v.(type) {
	case string:
		return r.String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[r.String(k)] = r.Value(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = r.Value(val)
		}
		return out
	}
	return v
}

// contentKeys are the arguments that carry file contents: always summarised.
var contentKeys = map[string]bool{"content": true, "old_string": true, "new_string": true}

// Limits of Summarise.
const (
	maxArgString  = 512  // a longer string argument becomes its summary
	maxArgCommand = 4096 // ... except a command's words, kept up to this
	maxArgItems   = 64   // array items kept
	maxArgDepth   = 4
	summaryHead   = 80 // bytes of a summarised string's beginning kept
)

// Summarise turns a call's raw arguments into what the timeline keeps: file contents
// (content, old_string, new_string) become their size and line count; other strings longer
// than 512 bytes their size, line count, hash and first 80 bytes; long arrays and deep values
// are cut. Arguments that are not a JSON object become their size. Known secrets are redacted
// first (a summary's beginning never holds part of one; red may be nil).
//
// A file's content is counted in its JSON text, never decoded: it is most of a write's
// arguments, and decoding it was most of what recording cost (docs/benchmarks.md).
func Summarise(raw json.RawMessage, red *Redactor) map[string]any {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return map[string]any{"unparsed_bytes": len(raw)}
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if contentKeys[k] && len(v) > 0 && v[0] == '"' {
			n, lines := jsonStringSize(v)
			out[k] = map[string]any{"bytes": n, "lines": lines}
			continue
		}
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			continue
		}
		x = red.Value(x)
		limit := maxArgString
		if k == "command" {
			limit = maxArgCommand
		}
		out[red.String(k)] = summariseValue(x, limit, 1)
	}
	return out
}

// jsonStringSize is the size in bytes and the number of newlines of the string a valid JSON
// string literal (with its quotes) decodes to. A lone surrogate counts as the 3 bytes of
// U+FFFD, as encoding/json decodes it.
func jsonStringSize(lit []byte) (n, lines int) {
	s := lit[1 : len(lit)-1]
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			n++
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch s[i] {
		case 'n':
			n++
			lines++
		case 'u':
			if i+4 >= len(s) {
				return n, lines
			}
			r, err := strconv.ParseUint(string(s[i+1:i+5]), 16, 32)
			i += 4
			if err != nil {
				continue
			}
			if utf16.IsSurrogate(rune(r)) && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if r2, err := strconv.ParseUint(string(s[i+3:i+7]), 16, 32); err == nil {
					if c := utf16.DecodeRune(rune(r), rune(r2)); c != utf8.RuneError {
						n += utf8.RuneLen(c)
						i += 6
						continue
					}
				}
			}
			if utf16.IsSurrogate(rune(r)) {
				n += 3
				continue
			}
			n += utf8.RuneLen(rune(r))
		default:
			n++
		}
	}
	return n, lines
}

func summariseValue(v any, limit, depth int) any {
	switch x := v.(type) {
	case string:
		if len(x) > limit {
			return summary(x, true)
		}
		return x
	case map[string]any:
		if depth >= maxArgDepth {
			data, _ := json.Marshal(x)
			return map[string]any{"cut": "object", "bytes": len(data)}
		}
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = summariseValue(val, limit, depth+1)
		}
		return out
	case []any:
		if depth >= maxArgDepth {
			return map[string]any{"cut": "array", "items": len(x)}
		}
		n := min(len(x), maxArgItems)
		out := make([]any, 0, n+1)
		for _, val := range x[:n] {
			out = append(out, summariseValue(val, limit, depth+1))
		}
		if len(x) > n {
			out = append(out, map[string]any{"cut": "items", "more": len(x) - n})
		}
		return out
	}
	return v
}

// summary is a string's size, lines and hash (and, with head, its beginning).
func summary(s string, head bool) map[string]any {
	sum := sha256.Sum256([]byte(s))
	m := map[string]any{"bytes": len(s), "lines": strings.Count(s, "\n"), "sha256": hex.EncodeToString(sum[:8])}
	if head {
		h := s[:min(len(s), summaryHead)]
		for !utf8.ValidString(h) && len(h) > 0 {
			h = h[:len(h)-1]
		}
		m["head"] = h
	}
	return m
}
