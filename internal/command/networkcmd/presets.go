package networkcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// PresetsOptions are what `network presets` depends on.
type PresetsOptions struct {
	IO *iostreams.IOStreams
	// JSON is --json: {"presets": [{name, summary, note, includes, hosts}, ...]}.
	JSON bool
}

// RunPresets prints the presets (netpolicy's table; no guest text: nothing to sanitise).
func RunPresets(_ context.Context, opts *PresetsOptions) error {
	presets := netpolicy.Presets()
	if opts.JSON {
		b, err := json.MarshalIndent(map[string]any{"presets": presets}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(opts.IO.Out, string(b))
		return err
	}
	return writeText(opts.IO.Out, presets)
}

// writeText prints each preset as its name and summary, then its hosts, indented:
//
//	@go  Go modules: ...
//	     proxy.golang.org, sum.golang.org, storage.googleapis.com
func writeText(w io.Writer, presets []netpolicy.Preset) error {
	width := 0
	for _, p := range presets {
		width = max(width, len(p.Name)+1)
	}
	var b strings.Builder
	for _, p := range presets {
		fmt.Fprintf(&b, "%-*s  %s\n", width, "@"+p.Name, p.Summary)
		indent := strings.Repeat(" ", width+2)
		fmt.Fprintf(&b, "%s%s\n", indent, strings.Join(p.Hosts, ", "))
		if p.Note != "" {
			fmt.Fprintf(&b, "%snote: %s\n", indent, p.Note)
		}
	}
	b.WriteString("\nUse them in an allow policy, with hosts: --network=allow:@go,@npm,example.com\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// markdown is the presets as docs/network.md lists them (between its presets markers).
func markdown(presets []netpolicy.Preset) string {
	var b strings.Builder
	b.WriteString("| Preset | For | Hosts |\n|---|---|---|\n")
	for _, p := range presets {
		hosts := make([]string, len(p.Hosts))
		for i, h := range p.Hosts {
			hosts[i] = "`" + h + "`"
		}
		what := p.Summary
		if p.Note != "" {
			what += " (" + p.Note + ")"
		}
		fmt.Fprintf(&b, "| `@%s` | %s | %s |\n", p.Name, what, strings.Join(hosts, ", "))
	}
	return b.String()
}

// detectionMarkdown is the detection table as docs/network.md lists it (between its detect
// markers): what configure proposes for which files.
func detectionMarkdown(rows []netpolicy.Detector) string {
	var b strings.Builder
	b.WriteString("| Files at the project's top | Proposed |\n|---|---|\n")
	for _, r := range rows {
		files := make([]string, len(r.Files))
		for i, f := range r.Files {
			files[i] = "`" + f + "`"
		}
		fmt.Fprintf(&b, "| %s | `@%s` |\n", strings.Join(files, ", "), r.Preset)
	}
	return b.String()
}
