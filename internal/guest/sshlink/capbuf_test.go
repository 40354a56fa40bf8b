package sshlink

import (
	"strings"
	"testing"
)

func TestCapBuffer(t *testing.T) {
	c := newCapBuffer(10)
	for _, s := range []string{"hello", " ", "wor"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got, err := c.result("x"); got != "hello wor" || err != nil {
		t.Fatalf("under the cap: %q, %v", got, err)
	}
	// Past the cap: the writer keeps accepting (the guest command is not cut off half-way),
	// and the result is refused.
	if n, err := c.Write([]byte("ld and more")); n != 11 || err != nil {
		t.Fatalf("Write past the cap = %d, %v", n, err)
	}
	if _, err := c.Write([]byte(strings.Repeat("x", 1<<20))); err != nil {
		t.Fatal(err)
	}
	if c.buf.Len() != 10 {
		t.Fatalf("kept %d bytes, want 10", c.buf.Len())
	}
	if _, err := c.result("net report"); err == nil || !strings.Contains(err.Error(), "over 10 bytes") {
		t.Fatalf("over the cap: %v", err)
	}
}
