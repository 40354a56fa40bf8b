package tui

import (
	"reflect"
	"strconv"

	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// theme is huh's Charm theme with its colours resolved once for the terminal.
//
// The theme's colours are hex strings, light and dark (lipgloss.AdaptiveColor); lipgloss turns
// one into the terminal's palette each time a style is rendered, and on a 256- or 16-colour
// terminal (tmux's default among them) that is a search of the palette for the nearest colour
// in HSLuv. huh's multi-select renders every option's styles on every draw: with 500 files the
// first screen spent about a third of its time in that search (a CPU profile of the real
// review in tmux). The nearest colour is the same every time, so each is looked up here once,
// with termenv's own conversion, and the theme is given the palette's numbers.
func theme() *huh.Theme {
	t := huh.ThemeCharm()
	prof := lipgloss.ColorProfile()
	if prof == termenv.Ascii || prof == termenv.TrueColor {
		// No colour at all; or a hex colour, which truecolour uses as it is (no search).
		return t
	}
	dark := lipgloss.HasDarkBackground()
	cache := map[string]lipgloss.TerminalColor{}
	resolve := func(c lipgloss.TerminalColor) lipgloss.TerminalColor {
		var s string
		switch v := c.(type) {
		case lipgloss.Color:
			s = string(v)
		case lipgloss.AdaptiveColor:
			s = v.Light
			if dark {
				s = v.Dark
			}
		default:
			return c // unset (NoColor), or a colour chosen per profile already
		}
		if r, ok := cache[s]; ok {
			return r
		}
		var r lipgloss.TerminalColor = lipgloss.NoColor{}
		switch tc := prof.Color(s).(type) {
		case termenv.ANSIColor:
			r = lipgloss.Color(strconv.Itoa(int(tc)))
		case termenv.ANSI256Color:
			r = lipgloss.Color(strconv.Itoa(int(tc)))
		case termenv.RGBColor:
			r = lipgloss.Color(string(tc))
		}
		cache[s] = r
		return r
	}
	resolveStyles(reflect.ValueOf(t).Elem(), func(s lipgloss.Style) lipgloss.Style { return resolveStyle(s, resolve) })
	return t
}

var styleType = reflect.TypeFor[lipgloss.Style]()

// resolveStyles applies f to every lipgloss.Style in the struct v, however deep.
func resolveStyles(v reflect.Value, f func(lipgloss.Style) lipgloss.Style) {
	for i := range v.NumField() {
		fv := v.Field(i)
		if !fv.CanSet() {
			continue
		}
		switch {
		case fv.Type() == styleType:
			fv.Set(reflect.ValueOf(f(fv.Interface().(lipgloss.Style))))
		case fv.Kind() == reflect.Struct:
			resolveStyles(fv, f)
		}
	}
}

// resolveStyle gives each colour s sets the colour resolve makes of it.
func resolveStyle(s lipgloss.Style, resolve func(lipgloss.TerminalColor) lipgloss.TerminalColor) lipgloss.Style {
	set := func(c lipgloss.TerminalColor, with func(lipgloss.TerminalColor) lipgloss.Style) {
		if _, unset := c.(lipgloss.NoColor); !unset && c != nil {
			s = with(resolve(c))
		}
	}
	set(s.GetForeground(), s.Foreground)
	set(s.GetBackground(), s.Background)
	set(s.GetBorderTopForeground(), s.BorderTopForeground)
	set(s.GetBorderRightForeground(), s.BorderRightForeground)
	set(s.GetBorderBottomForeground(), s.BorderBottomForeground)
	set(s.GetBorderLeftForeground(), s.BorderLeftForeground)
	set(s.GetBorderTopBackground(), s.BorderTopBackground)
	set(s.GetBorderRightBackground(), s.BorderRightBackground)
	set(s.GetBorderBottomBackground(), s.BorderBottomBackground)
	set(s.GetBorderLeftBackground(), s.BorderLeftBackground)
	return s
}
