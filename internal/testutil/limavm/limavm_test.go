package limavm

import (
	"context"
	"strings"
	"testing"
)

// Runs without a VM: a host without the kit gets an error that says how to set it up.
func TestBootWithoutKit(t *testing.T) {
	t.Setenv("KIT_DIR", t.TempDir()+"/no-kit")
	t.Setenv("LIMACTL_MCP_E2E_DIR", t.TempDir())
	_, err := Boot(context.Background(), "nokit")
	if err == nil {
		t.Fatal("Boot succeeded without a kit")
	}
	for _, want := range []string{"sudo hack/e2e/setup.sh", "no-kit/prefix/bin/limactl", "image-fast/rootfs.qcow2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"a", "limavm-e2e", "x_1.2"} {
		if err := validName(ok); err != nil {
			t.Errorf("validName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "a/b", "a b", strings.Repeat("a", 41)} {
		if err := validName(bad); err == nil {
			t.Errorf("validName(%q) = nil, want an error", bad)
		}
	}
}

func TestLookPathIn(t *testing.T) {
	if p, err := lookPathIn("sh", "/nonexistent:/bin"); err != nil || p != "/bin/sh" {
		t.Errorf("lookPathIn(sh) = %q, %v", p, err)
	}
	if _, err := lookPathIn("no-such-program-xyz", "/bin"); err == nil {
		t.Error("lookPathIn found a program that does not exist")
	}
	if p, _ := lookPathIn("./x", ""); p != "./x" {
		t.Errorf("lookPathIn(./x) = %q", p)
	}
}

func TestTail(t *testing.T) {
	if got := tail("a\nb\nc\n", 2); got != "[... 1 lines omitted]\nb\nc\n" {
		t.Errorf("tail = %q", got)
	}
	if got := tail("a\n", 5); got != "a\n" {
		t.Errorf("tail = %q", got)
	}
}
