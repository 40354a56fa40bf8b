package servecmd

import (
	"runtime/debug"
	"testing"
)

// serve keeps its heap small (GOGC=50) unless the user set GOGC, which then stays as it is.
func TestServeStaysLean(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	stayLean()
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("without GOGC: GC percent %d, want 50", got)
	}
	t.Setenv("GOGC", "200")
	debug.SetGCPercent(200) // as the runtime does at start for GOGC=200
	stayLean()
	if got := debug.SetGCPercent(100); got != 200 {
		t.Errorf("with GOGC=200: GC percent %d, want 200 kept", got)
	}
}
