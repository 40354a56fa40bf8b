package review

import (
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
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
		oldPath := it.Path
		if it.From != nil {
			base, oldPath = it.From.Base, it.From.Path // a rename (the agent's, or under the host's name rule)
		}
		if it.Conflict {
			note("conflict (the host changed it too): %s", it.Display)
		}
		if (g != nil && g.Type != tree.File) || (g == nil && base != nil && base.Type != tree.File) || (it.From != nil && (base == nil || base.Type != tree.File)) {
			note("%s: %s (not expressible as a text patch)", it.Display, it.Description)
			continue
		}
		if !it.Text && it.BaseText == "" && it.GuestText == "" && !(g != nil && g.Size == 0) && !(g == nil && base != nil && base.Size == 0) {
			if it.Kind != staging.ModeChanged && !(it.Moved && base.Hash == g.Hash) {
				note("%s: binary or large file changed (not in this patch)", it.Display)
				continue
			}
		}
		if it.From != nil {
			b.WriteString("diff --git " + udiff.GitQuote("a/"+oldPath) + " " + udiff.GitQuote("b/"+it.Path) + "\n" + udiff.GitModeLines(modeOf(base), modeOf(g)))
			b.WriteString("rename from " + udiff.GitQuote(oldPath) + "\nrename to " + udiff.GitQuote(it.Path) + "\n")
		} else {
			b.WriteString(udiff.GitHeader(it.Path) + udiff.GitModeLines(modeOf(base), modeOf(g)))
		}
		from, to := udiff.GitQuote("a/"+oldPath), udiff.GitQuote("b/"+it.Path)
		if base == nil {
			from = "/dev/null"
		}
		if g == nil {
			to = "/dev/null"
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

// modeOf is e's mode for a patch header (nil: absent).
func modeOf(e *tree.Entry) *uint32 {
	if e == nil {
		return nil
	}
	return &e.Mode
}
