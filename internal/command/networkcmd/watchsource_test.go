package networkcmd

import (
	"context"
	"testing"
	"time"
)

// A watch's end waits for the read on its way (which marks the watch again) before it takes the
// markers away, and lets no read start after it; a watch that never read has nothing to take
// away; a read stuck past the end's bound does not hold the end.
func TestWatchEndsAfterItsLastRead(t *testing.T) {
	var never markers
	if never.end(context.Background()) {
		t.Error("a watch that never read says it marked")
	}

	var m markers
	done, err := m.start()
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan bool, 1)
	go func() { ended <- m.end(context.Background()) }()
	select {
	case <-ended:
		t.Fatal("the end did not wait for the read on its way")
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := m.start(); err == nil {
		t.Error("a read started after the end began")
	}
	done()
	select {
	case marked := <-ended:
		if !marked {
			t.Error("a watch that read says it never marked")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the end did not return once the read was done")
	}

	var stuck markers
	if _, err := stuck.start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if !stuck.end(ctx) {
		t.Error("a stuck read: the end says nothing was marked")
	}
}
