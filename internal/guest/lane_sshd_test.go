package guest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/keyauth"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// TestFastLane: the real runner, started over the real sshd, opens its fast lane to this
// host's loopback (the guest is this machine, so LaneHost is 127.0.0.1) and the file tools'
// requests go there, with the same answers as on the channel; when the lane ends, the next
// requests go on the channel. A listener that does not prove the key gets the runner's hello
// and nothing else, and the runner refuses to attach there.
func TestFastLane(t *testing.T) {
	srv := sshd.Start(t)
	c := guesttest.Connect(t, srv, guest.Options{LaneHost: "127.0.0.1", NoLoginShell: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := fmt.Sprintf("%s/lane-%d", srv.Home, os.Getpid())
	srv.Run(t, "bash", "-c", "rm -rf "+d+" && mkdir -p "+d)
	r, err := c.Runner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for up, _ := r.Lane(); !up; up, _ = r.Lane() {
		if time.Now().After(deadline) {
			t.Fatal("the fast lane did not open")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fileTools := func(name string) {
		t.Helper()
		if err := c.WriteFile(ctx, d+"/sub/"+name, []byte("hello "+name), 0o644, true); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		if data, err := c.ReadFile(ctx, d+"/sub/"+name, 100); err != nil || string(data) != "hello "+name {
			t.Fatalf("read %s: %q %v", name, data, err)
		}
		if l, err := c.List(ctx, d+"/sub", 100); err != nil || !strings.Contains(fmt.Sprint(l), name) {
			t.Fatalf("list: %+v %v", l, err)
		}
		if g, err := c.Glob(ctx, d, "**/"+name, 10); err != nil || len(g.Matches) != 1 {
			t.Fatalf("glob: %+v %v", g, err)
		}
	}
	_, before := r.Lane()
	fileTools("one.txt")
	if up, after := r.Lane(); !up || after-before < 4 {
		t.Fatalf("the file tools' requests did not go on the lane: up %v, %d requests on it", up, after-before)
	}
	// A command stays on the channel, and works beside the lane.
	if res, err := c.Exec(ctx, guest.ExecRequest{Argv: []string{"cat", d + "/sub/one.txt"}, Dir: d, HeadBytes: 100, TailBytes: 100}); err != nil || string(res.Stdout.Head)+string(res.Stdout.Tail) != "hello one.txt" {
		t.Fatalf("a command: %+v %v", res, err)
	}

	// The lane ends: the channel carries the next requests.
	r.DropLane()
	for up, _ := r.Lane(); up; up, _ = r.Lane() {
		time.Sleep(10 * time.Millisecond)
	}
	fileTools("two.txt")

	// An impostor at the address the runner is told: it gets the hello, the runner does not
	// attach, and nothing of a request reaches it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		cn, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer cn.Close()
		cn.SetDeadline(time.Now().Add(20 * time.Second))
		hello := make([]byte, keyauth.HelloSize+32)
		if _, err := io.ReadFull(cn, hello); err != nil {
			got <- nil
			return
		}
		cn.Write(bytes.Repeat([]byte{9}, 64)) // not a proof
		rest, _ := io.ReadAll(cn)
		got <- append(hello, rest...)
	}()
	if err := r.Attach(ctx, ln.Addr().String(), keyauth.NewKey()); err == nil {
		t.Fatal("the runner attached to a listener that did not prove the key")
	}
	seen := <-got
	if len(seen) != keyauth.HelloSize+32 || string(seen[:keyauth.HelloSize]) != runnerproto.LaneHello {
		t.Fatalf("the impostor got %q, want the lane's hello alone", seen)
	}
	if up, _ := r.Lane(); up {
		t.Fatal("a lane up after the impostor")
	}
	fileTools("three.txt")
}
