package forkcmd

import (
	"strings"
	"testing"
)

func TestParseFrom(t *testing.T) {
	for _, c := range []struct{ flag, from, ckpt, err string }{
		{"", "", "", ""},
		{"default", "", "", ""},
		{"default@3", "", "3", ""},
		{"@12", "", "12", ""},
		{"claude@7", "claude", "7", ""},
		{"claude@", "", "", "checkpoint id"},
		{"claude@x1", "", "", "checkpoint id"},
		{"claude@1@2", "", "", "checkpoint id"},
		{"claude@1234567890123", "", "", "checkpoint id"},
		{"a/b@1", "", "", "session name"},
	} {
		from, ckpt, err := ParseFrom(c.flag)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseFrom(%q) error %v, want %q", c.flag, err, c.err)
		case c.err == "" && (err != nil || from != c.from || ckpt != c.ckpt):
			t.Errorf("ParseFrom(%q) = %q, %q, %v; want %q, %q", c.flag, from, ckpt, err, c.from, c.ckpt)
		}
	}
}

func TestCheckNames(t *testing.T) {
	many := make([]string, maxForks+1)
	for i := range many {
		many[i] = "s" + strings.Repeat("x", i)
	}
	for _, c := range []struct {
		from  string
		names []string
		err   string
	}{
		{"", []string{"a", "b"}, ""},
		{"", []string{"default"}, "named session"},
		{"", []string{""}, "named session"},
		{"a", []string{"a"}, "the session forked from"},
		{"", []string{"a", "a"}, "named twice"},
		{"", []string{"-a"}, "1 to 32"},
		{"", many, "at most 16"},
	} {
		err := checkNames(c.from, c.names)
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("checkNames(%q, %q) = %v, want %q", c.from, c.names, err, c.err)
		}
	}
}
