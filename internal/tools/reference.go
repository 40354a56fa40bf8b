package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// WriteReference writes the Markdown reference of tools (as [List] returns them): an index,
// then for each tool, by name, its title, description, annotations, and input and output
// schemas as JSON. The output depends only on the tools, so it can be checked in.
func WriteReference(w io.Writer, tools []*mcp.Tool) error {
	tools = slices.Clone(tools)
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })

	var b bytes.Buffer
	b.WriteString("| Tool | Title | Read-only | Destructive | Idempotent | Open world |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, t := range tools {
		h := hintsOf(t)
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s | %s |\n", t.Name, anchor(t.Name),
			escapeCell(displayTitle(t)), yesNo(h.readOnly), h.destructive, yesNo(h.idempotent), yesNo(h.openWorld))
	}
	b.WriteString("\nThe columns are the tool annotations (hints) of the MCP specification, with its defaults " +
		"for the ones a tool leaves out. Destructive and idempotent mean something only for a tool " +
		"that is not read-only; open world means the tool may interact with external entities.\n")
	b.WriteString("\nArguments are exactly the input schemas' properties (Lima's names where the tool is " +
		"Lima's: `write_file` and `read_file` take `path`, `replace` takes `file_path`, as Gemini CLI's " +
		"does). No other name is accepted in their place, so that what a client reads in the schema is " +
		"what the server does; instead, a call with an unknown or a missing argument is answered with " +
		"an error that names the argument the tool takes closest to the unknown one (`unknown argument " +
		"file_path: did you mean path? write_file takes path, content`), the missing required ones, and " +
		"everything the tool takes, before the go-sdk's own words (`validating \"arguments\": ...`).\n")

	for _, t := range tools {
		h := hintsOf(t)
		fmt.Fprintf(&b, "\n## %s\n\n", t.Name)
		fmt.Fprintf(&b, "**%s**\n\n", escapeInline(displayTitle(t)))
		if t.Description != "" {
			// The descriptions are written for models, with hard line breaks and glob
			// patterns that Markdown would take for emphasis: shown as they are.
			b.WriteString(fence("text", t.Description))
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "Annotations: read-only: %s; destructive: %s; idempotent: %s; open world: %s.\n\n",
			yesNo(h.readOnly), h.destructive, yesNo(h.idempotent), yesNo(h.openWorld))

		b.WriteString("Input schema:\n\n")
		if err := writeSchema(&b, t.InputSchema); err != nil {
			return fmt.Errorf("tool %s: input schema: %w", t.Name, err)
		}
		if t.OutputSchema != nil {
			b.WriteString("\nOutput schema (of the structured content of the result):\n\n")
			if err := writeSchema(&b, t.OutputSchema); err != nil {
				return fmt.Errorf("tool %s: output schema: %w", t.Name, err)
			}
		} else {
			b.WriteString("\nNo output schema: the result is unstructured content only.\n")
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

type hints struct {
	readOnly, idempotent, openWorld bool
	destructive                     string // "yes", "no", or "n/a" for a read-only tool
}

// hintsOf applies the specification's defaults for annotations a tool leaves out.
func hintsOf(t *mcp.Tool) hints {
	a := t.Annotations
	if a == nil {
		a = &mcp.ToolAnnotations{}
	}
	h := hints{readOnly: a.ReadOnlyHint, idempotent: a.IdempotentHint, openWorld: true, destructive: "yes"}
	if a.OpenWorldHint != nil {
		h.openWorld = *a.OpenWorldHint
	}
	if a.DestructiveHint != nil {
		h.destructive = yesNo(*a.DestructiveHint)
	}
	if h.readOnly {
		h.destructive = "n/a"
	}
	return h
}

func displayTitle(t *mcp.Tool) string {
	switch {
	case t.Title != "":
		return t.Title
	case t.Annotations != nil && t.Annotations.Title != "":
		return t.Annotations.Title
	}
	return t.Name
}

func writeSchema(b *bytes.Buffer, schema any) error {
	// Maps marshal with sorted keys, so the text is stable.
	j, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		return err
	}
	b.WriteString(fence("json", string(j)))
	return nil
}

// fence returns s in a fenced code block, with a fence longer than any run of backticks in s.
func fence(lang, s string) string {
	n := 3
	for run := 0; ; {
		i := strings.Index(s[run:], "`")
		if i < 0 {
			break
		}
		j := run + i
		k := j
		for k < len(s) && s[k] == '`' {
			k++
		}
		n = max(n, k-j+1)
		run = k
	}
	f := strings.Repeat("`", n)
	return f + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + f + "\n"
}

// anchor is the heading anchor GitHub gives "## name" for a tool name.
func anchor(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func escapeInline(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", "[", `\[`)
	return r.Replace(s)
}

func escapeCell(s string) string {
	return strings.ReplaceAll(escapeInline(s), "|", `\|`)
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}
