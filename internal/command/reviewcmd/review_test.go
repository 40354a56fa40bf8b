package reviewcmd_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
)

// The policy of --yes: accept what is neither a conflict nor refused, skip conflicts, leave
// refused items undecided.
func TestAcceptNonConflicts(t *testing.T) {
	cs := &review.Changeset{Items: []*review.Item{
		{Path: "plain"},
		{Path: "conflict", Conflict: true},
		{Path: "refused", Refused: "a .git path"},
		{Path: "refused-conflict", Conflict: true, Refused: "special file"},
	}}
	got := reviewcmd.AcceptNonConflicts(cs)
	want := []review.Decision{{Path: "plain", Action: review.Accept}, {Path: "conflict", Action: review.Skip}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decisions %+v, want %+v", got, want)
	}
	if got := reviewcmd.AcceptNonConflicts(&review.Changeset{}); got != nil {
		t.Errorf("no items: %+v", got)
	}
}

// A PATH outside the working directory is refused before the instance is opened.
func TestReviewPathOutsideWorkdir(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	work := t.TempDir()
	opened := false
	err := reviewcmd.Run(context.Background(), &reviewcmd.Options{
		IO: ios, Instance: "x", Workdir: work, Paths: []string{"/etc/passwd"}, Yes: true,
		Open: func(context.Context, string) (*sessionopen.Target, error) {
			opened = true
			return nil, context.Canceled
		},
	})
	if err == nil || !strings.Contains(err.Error(), "/etc/passwd is outside the working directory") {
		t.Errorf("error %v", err)
	}
	if opened || out.Len() != 0 {
		t.Errorf("opened the instance: %v; stdout %q", opened, out.String())
	}
}
