package timeline

import (
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// Describe says an event in words, without its time.
func Describe(e *Event) string {
	var b strings.Builder
	switch e.Kind {
	case Call:
		b.WriteString(e.Tool)
		if e.Command != "" {
			b.WriteString(" `" + OneLine(e.Command, 200) + "`")
		}
		if len(e.Paths) > 0 {
			b.WriteString(" " + strings.Join(e.Paths, ", "))
		}
		if e.Background != 0 {
			fmt.Fprintf(&b, " → background %d", e.Background)
		}
		if e.Checkpoint != "" {
			b.WriteString(" checkpoint " + e.Checkpoint)
		}
		if c, ok := e.Args["content"].(map[string]any); ok {
			fmt.Fprintf(&b, " (%v bytes)", c["bytes"])
		}
	case Command:
		b.WriteString("shell `" + OneLine(e.Command, 200) + "`")
	case BackgroundStart:
		fmt.Fprintf(&b, "background %d started: `%s`", e.Background, OneLine(e.Command, 200))
	case BackgroundExit:
		fmt.Fprintf(&b, "background %d ended", e.Background)
	case ServeStart:
		b.WriteString("server started")
		if e.Note != "" {
			b.WriteString(" (" + e.Note + ")")
		}
	case ServeEnd:
		b.WriteString("server ended")
	case Network:
		describeNetwork(&b, e)
	default:
		b.WriteString(string(e.Kind))
		if e.Checkpoint != "" {
			b.WriteString(" checkpoint " + e.Checkpoint)
		}
		if e.Count > 0 {
			fmt.Fprintf(&b, ": %s", words.Count(e.Count, "path"))
		}
		if len(e.Paths) > 0 {
			b.WriteString(" (" + strings.Join(e.Paths[:min(len(e.Paths), 5)], ", "))
			if len(e.Paths) > 5 {
				fmt.Fprintf(&b, ", and %d more", len(e.Paths)-5)
			}
			b.WriteString(")")
		}
	}
	var detail []string
	if e.Exit != nil {
		detail = append(detail, fmt.Sprintf("exit %d", *e.Exit))
	}
	if e.Signal != "" {
		detail = append(detail, "signal "+e.Signal)
	}
	if e.DurationMS > 0 {
		detail = append(detail, Duration(e.DurationMS))
	}
	if e.ResultBytes > 0 {
		detail = append(detail, byteCount(e.ResultBytes)+" back")
	}
	if e.Kind == Call && e.Count > 0 {
		detail = append(detail, words.Count(e.Count, "path")+" changed")
	}
	if len(detail) > 0 {
		b.WriteString(" (" + strings.Join(detail, ", ") + ")")
	}
	if e.Error != "" {
		b.WriteString(" — error: " + OneLine(e.Error, 200))
	}
	if e.Note != "" && e.Kind != ServeStart && e.Kind != Network {
		b.WriteString(" — " + e.Note)
	}
	return b.String()
}

// OneLine is s on one line (line breaks shown as ⏎), cut after n bytes.
func OneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if len(s) > n {
		cut := n
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func byteCount(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// describeNetwork says a network event: "blocked github.com:443 (direct), 3 attempts until
// 10:02:40 — not in the allow list"; "reached pypi.org:443, 2 connections, 1.2 kB sent,
// 3.4 MB received".
func describeNetwork(b *strings.Builder, e *Event) {
	n := max(e.Count, 1)
	if e.Host == "" {
		// Attempts counted by the record whose entries it no longer holds.
		fmt.Fprintf(b, "network: %s %s, not itemised", words.Count(n, "attempt"), e.Verdict)
		if e.Note != "" {
			b.WriteString(" — " + OneLine(e.Note, 200))
		}
		return
	}
	dest := fmt.Sprintf("%s:%d", OneLine(e.Host, maxHostBytes), e.Port)
	if strings.Contains(e.Host, ":") {
		dest = fmt.Sprintf("[%s]:%d", OneLine(e.Host, maxHostBytes), e.Port) // an IPv6 address
	}
	switch {
	case e.Verdict == "allowed" && e.Note == "":
		fmt.Fprintf(b, "network: reached %s, %s", dest, words.Count(n, "connection"))
	case e.Verdict == "allowed":
		fmt.Fprintf(b, "network: allowed %s, %s failed", dest, words.Count(n, "attempt"))
	default:
		fmt.Fprintf(b, "network: blocked %s (%s), %s", dest, e.Via, words.Count(n, "attempt"))
	}
	if e.BytesUp > 0 || e.BytesDown > 0 {
		fmt.Fprintf(b, ", %s sent, %s received", byteCount(int(e.BytesUp)), byteCount(int(e.BytesDown)))
	}
	if n > 1 && e.Last.After(e.Time) {
		b.WriteString(" until " + clock(e.Last))
	}
	if e.Note != "" {
		b.WriteString(" — " + OneLine(e.Note, 200))
	}
}
