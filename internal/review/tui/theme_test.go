package tui

import (
	"reflect"
	"testing"

	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// The theme with its colours resolved draws every one of its styles exactly as huh's own
// theme does, on 16- and 256-colour terminals, light and dark, and with no colour.
func TestThemeDrawsAsHuhs(t *testing.T) {
	prof, dark := lipgloss.ColorProfile(), lipgloss.HasDarkBackground()
	t.Cleanup(func() {
		lipgloss.SetColorProfile(prof)
		lipgloss.SetHasDarkBackground(dark)
	})
	for _, p := range []termenv.Profile{termenv.Ascii, termenv.ANSI, termenv.ANSI256, termenv.TrueColor} {
		for _, d := range []bool{false, true} {
			lipgloss.SetColorProfile(p)
			lipgloss.SetHasDarkBackground(d)
			want, got := styles(huh.ThemeCharm()), styles(theme())
			if len(want) < 40 || len(got) != len(want) {
				t.Fatalf("profile %v dark %v: %d styles in huh's theme, %d in ours", p, d, len(want), len(got))
			}
			coloured := 0
			for i := range want {
				w, g := want[i].Render("a b"), got[i].Render("a b")
				if w != g {
					t.Errorf("profile %v dark %v, style %d: %q, huh's %q", p, d, i, g, w)
				}
				if w != lipgloss.NewStyle().Render("a b") {
					coloured++
				}
			}
			if p == termenv.ANSI256 && coloured < 10 {
				t.Fatalf("only %d of huh's styles draw differently from no style: the test compares nothing", coloured)
			}
		}
	}
}

// styles lists every lipgloss.Style in th, in field order.
func styles(th *huh.Theme) []lipgloss.Style {
	var out []lipgloss.Style
	resolveStyles(reflect.ValueOf(th).Elem(), func(s lipgloss.Style) lipgloss.Style {
		out = append(out, s.BorderStyle(lipgloss.NormalBorder()))
		return s
	})
	return out
}
