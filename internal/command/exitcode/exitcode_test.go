package exitcode_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
)

func TestOf(t *testing.T) {
	base := errors.New("needs --yes")
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, exitcode.OK},
		{base, exitcode.Error},
		{exitcode.ErrSilent, exitcode.Error},
		{exitcode.With(exitcode.Pending, base), exitcode.Pending},
		{fmt.Errorf("wrapped: %w", exitcode.With(exitcode.Pending, base)), exitcode.Pending},
	} {
		if got := exitcode.Of(tc.err); got != tc.want {
			t.Errorf("Of(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	err := exitcode.With(exitcode.Pending, exitcode.ErrSilent)
	if !errors.Is(err, exitcode.ErrSilent) || err.Error() != exitcode.ErrSilent.Error() {
		t.Errorf("With hides its error: %v", err)
	}
}
