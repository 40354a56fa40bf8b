//go:build !linux

package enforce

import "errors"

var errNoOpenat2 = errors.New("openat2 is not available")

// openat2NoSymlinks is Linux's: elsewhere the walk goes component by component.
func openat2NoSymlinks(string) (int, error) { return -1, errNoOpenat2 }
