package sessionopen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// A missing instance or session names the instances where the working directory is staged.
func TestStagedElsewhere(t *testing.T) {
	old := Elsewhere
	t.Cleanup(func() { Elsewhere = old })
	Elsewhere = func(_ context.Context, name, workdir, session string) []string {
		if workdir == "/p" && session == "" || workdir == "/s" && session == "b" {
			return []string{"agent"}
		}
		return nil
	}
	missing := fmt.Errorf(`%w "default"`, instance.ErrNotExist)
	err := stagedElsewhere(context.Background(), missing, "review", "default", "/p", "")
	if !strings.Contains(err.Error(), `/p is staged in instance "agent", not "default": name it, as in `+"`limactl mcp review agent`") || !errors.Is(err, instance.ErrNotExist) {
		t.Errorf("got %v", err)
	}
	nosess := noSession{"/p has no staged session in instance \"default\""}
	if err := stagedElsewhere(context.Background(), nosess, "sync", "default", "/p", ""); !strings.Contains(err.Error(), `staged in instance "agent", not "default": name it, as in `+"`limactl mcp sync agent`") || !errors.Is(err, staging.ErrNoSession) {
		t.Errorf("got %v", err)
	}
	// A named session is looked for, and named, as itself.
	if err := stagedElsewhere(context.Background(), nosess, "review", "default", "/s", "b"); !strings.Contains(err.Error(), "`limactl mcp review --session b agent`") {
		t.Errorf("named session: got %v", err)
	}
	if err := stagedElsewhere(context.Background(), nosess, "review", "default", "/p", "b"); err != error(nosess) {
		t.Errorf("named session staged nowhere: got %v", err)
	}
	if err := stagedElsewhere(context.Background(), missing, "review", "default", "/q", ""); err != missing {
		t.Errorf("nothing elsewhere: got %v", err)
	}
	other := errors.New("connection refused")
	if err := stagedElsewhere(context.Background(), other, "review", "default", "/p", ""); err != other {
		t.Errorf("another error: got %v", err)
	}
}

// A misspelled instance's error gets the command meant, on the instance it is close to.
func TestWithCommand(t *testing.T) {
	typo := fmt.Errorf("opening: %w", &instance.NotExistError{Name: "confz", Near: "confs"})
	err := WithCommand(typo, "review")
	if !strings.HasSuffix(err.Error(), "; to review \"confs\": `limactl mcp review confs`") || !errors.Is(err, instance.ErrNotExist) {
		t.Errorf("got %v", err)
	}
	far := &instance.NotExistError{Name: "zzz"}
	if err := WithCommand(far, "review"); err != error(far) {
		t.Errorf("nothing close: got %v", err)
	}
	other := errors.New("connection refused")
	if err := WithCommand(other, "status"); err != other {
		t.Errorf("another error: got %v", err)
	}
}
