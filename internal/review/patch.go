package review

import (
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Patch renders the changeset as a unified diff that `git apply` accepts (text changes, new
// and deleted files, mode changes; binaries and symlinks are noted, not encoded). Names are
// quoted the way git quotes them and every note is one escaped line, so that no name or
// message from the guest can add lines of its own to the patch.
func Patch(cs *Changeset) string {
	var b strings.Builder
	note := func(format string, args ...any) {
		b.WriteString("# " + termsafe.String(fmt.Sprintf(format, args...)) + "\n")
	}
	for _, it := range cs.Items {
		if it.Refused != "" {
			note("refused: %s: %s", it.Display, it.Refused)
			continue
		}
		g, base := it.Guest, it.Base
		if it.Conflict {
			note("conflict (the host changed it too): %s", it.Display)
		}
		if (g != nil && g.Type != tree.File) || (g == nil && base != nil && base.Type != tree.File) {
			note("%s: %s (not expressible as a text patch)", it.Display, it.Description)
			continue
		}
		if !it.Text && it.BaseText == "" && it.GuestText == "" && !(g != nil && g.Size == 0) && !(g == nil && base != nil && base.Size == 0) {
			if it.Kind != staging.ModeChanged {
				note("%s: binary or large file changed (not in this patch)", it.Display)
				continue
			}
		}
		from, to := gitQuote("a/"+it.Path), gitQuote("b/"+it.Path)
		fmt.Fprintf(&b, "diff --git %s %s\n", from, to)
		switch {
		case base == nil:
			fmt.Fprintf(&b, "new file mode 100%o\n", g.Mode&0o777)
			from = "/dev/null"
		case g == nil:
			fmt.Fprintf(&b, "deleted file mode 100%o\n", base.Mode&0o777)
			to = "/dev/null"
		case base.Mode&0o777 != g.Mode&0o777:
			fmt.Fprintf(&b, "old mode 100%o\nnew mode 100%o\n", base.Mode&0o777, g.Mode&0o777)
		}
		if len(it.Hunks) == 0 {
			continue
		}
		fmt.Fprintf(&b, "--- %s\n+++ %s\n", from, to)
		for _, h := range it.Hunks {
			b.WriteString(h.Render())
		}
	}
	return b.String()
}

// gitQuote quotes a name as git does in patches (quote_c_style, with core.quotePath): a name
// with a control character, a quote, a backslash or a byte over 0x7f is written in double
// quotes with C escapes, which `git apply` reads back.
func gitQuote(name string) string {
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
