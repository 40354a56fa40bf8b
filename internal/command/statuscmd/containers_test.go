package statuscmd

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestParseAndPrintContainers(t *testing.T) {
	var b bytes.Buffer
	printContainers(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no daemon printed %q", b.String())
	}
	r := parseContainers(0, "db\tpostgres:16\tUp 2 minutes\nweb\tlmcp-probe:1\tUp 5 seconds\n")
	b.Reset()
	printContainers(&b, r)
	if want := "  containers: 2 running\n    db  postgres:16  Up 2 minutes\n    web  lmcp-probe:1  Up 5 seconds\n"; b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	printContainers(&b, parseContainers(0, ""))
	if b.String() != "  containers: none running\n" {
		t.Errorf("none: %q", b.String())
	}
	b.Reset()
	printContainers(&b, parseContainers(3, ""))
	if !strings.Contains(b.String(), "containers: unknown (its Docker daemon does not answer") {
		t.Errorf("no answer: %q", b.String())
	}
	// Guest text: escapes never reach the terminal; the list is bounded.
	var many strings.Builder
	for i := 0; i < maxContainerLines+7; i++ {
		fmt.Fprintf(&many, "c%d\t\x1b]0;owned\x07img\tUp\n", i)
	}
	b.Reset()
	printContainers(&b, parseContainers(0, many.String()))
	if strings.ContainsAny(b.String(), "\x1b\x07") {
		t.Errorf("an escape reached the output: %q", b.String())
	}
	if !strings.Contains(b.String(), fmt.Sprintf("containers: %d running", maxContainerLines+7)) || !strings.Contains(b.String(), "… and 7 more\n") ||
		strings.Count(b.String(), "\n") != maxContainerLines+2 {
		t.Errorf("bounded list:\n%s", b.String())
	}
}
