package udiff

import (
	"fmt"
	"strings"
)

// The parts of a git patch around the hunks, written once for every patch this program
// prints (the review's --patch, the agent's pending diffs).

// GitHeader is the first line of a file's part of a git patch.
func GitHeader(path string) string {
	return "diff --git " + GitQuote("a/"+path) + " " + GitQuote("b/"+path) + "\n"
}

// GitModeLines are the mode lines of a regular file's part of a git patch: "new file mode"
// when there is no old mode, "deleted file mode" when there is no new one, "old mode" and
// "new mode" when the permission bits differ, else nothing.
func GitModeLines(oldMode, newMode *uint32) string {
	switch {
	case oldMode == nil && newMode == nil:
		return ""
	case oldMode == nil:
		return fmt.Sprintf("new file mode 100%o\n", *newMode&0o777)
	case newMode == nil:
		return fmt.Sprintf("deleted file mode 100%o\n", *oldMode&0o777)
	case *oldMode&0o777 != *newMode&0o777:
		return fmt.Sprintf("old mode 100%o\nnew mode 100%o\n", *oldMode&0o777, *newMode&0o777)
	}
	return ""
}

// GitQuote quotes a name as git does in patches (quote_c_style, with core.quotePath): a name
// with a control character, a quote, a backslash or a byte over 0x7f is written in double
// quotes with C escapes, which `git apply` reads back.
func GitQuote(name string) string {
	if !strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' || r >= 0x7f }) {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, "\\%03o", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
