package enforce

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two set-ups of one user do not run at once: the second waits for the first (bounded by its
// context), another user's does not wait, and a link at the lock's path is never followed.
func TestLockUserSerialisesOneUser(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockUser(context.Background(), dir, "lmcp-a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockUser(ctx, dir, "lmcp-a"); err == nil || !strings.Contains(err.Error(), "waiting for another set-up of lmcp-a") {
		t.Fatalf("a second set-up of the same user while the first holds the lock: %v", err)
	}
	other, err := lockUser(context.Background(), dir, "lmcp-b")
	if err != nil {
		t.Fatalf("another user's set-up waits: %v", err)
	}
	other()
	got := make(chan error, 1)
	go func() {
		u, err := lockUser(context.Background(), dir, "lmcp-a")
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("after the first set-up ended: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiting set-up never got the lock")
	}

	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Symlink(target, filepath.Join(dir, "lmcp-c.lock")); err != nil {
		t.Fatal(err)
	}
	if _, err := lockUser(context.Background(), dir, "lmcp-c"); err == nil {
		t.Error("a link at the lock's path was followed")
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("the link's target was made: %v", err)
	}
}
