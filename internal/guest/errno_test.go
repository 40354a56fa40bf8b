package guest

import "testing"

// A name the host does not know is no errno: the host words the error itself.
func TestErrnoNamed(t *testing.T) {
	if errnoNamed("EWHATEVER") != 0 || errnoNamed("ENOSPC") == 0 {
		t.Error("errnoNamed")
	}
}
