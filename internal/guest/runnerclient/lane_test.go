package runnerclient

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/lockedbuf"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// recorder is a channel that records what is written and never answers.
type recorder struct{ lockedbuf.Buffer }

func (w *recorder) Close() error { return nil }
func (w *recorder) Len() int     { return len(w.String()) }

// A fast lane that ends with a write on it: that call gets an error that says so (not a
// hang, not a runner stopped), the lane is down, and the next request goes on the channel.
// A command never goes on the lane.
func TestLaneEndsInFlight(t *testing.T) {
	r := newClient()
	ch := &recorder{}
	r.stdin, r.stop = ch, func() {}
	clientEnd, runnerEnd := net.Pipe()
	r.UseLane(clientEnd)
	go func() {
		var req runnerproto.Request
		_ = runnerproto.ReadFrame(bufio.NewReader(runnerEnd), &req)
		runnerEnd.Close() // hangs up with the request unanswered
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	read := &runnerproto.Request{Read: &runnerproto.ReadRequest{Path: tree.Name("/x"), Limit: 10}}
	write := &runnerproto.Request{Write: &runnerproto.WriteRequest{Path: "/x", Data: []byte("x"), Mode: 0o644}}
	resp, err := r.call(ctx, write, func(*runnerproto.Response) error { return nil })
	if err = result(resp, err); err == nil || !strings.Contains(err.Error(), "fast lane") {
		t.Fatalf("the call in flight: %v, want the lane's end said", err)
	}
	if up, _ := r.Lane(); up {
		t.Fatal("the lane still up")
	}
	select {
	case <-r.Done():
		t.Fatal("the runner was stopped for the lane's end")
	default:
	}
	if ch.Len() != 0 {
		t.Fatal("the request went on the channel too")
	}
	go func() {
		_, _ = r.call(ctx, &runnerproto.Request{Read: &runnerproto.ReadRequest{Path: tree.Name("/y"), Limit: 10}}, func(*runnerproto.Response) error { return nil })
	}()
	for ch.Len() == 0 {
		if ctx.Err() != nil {
			t.Fatal("the next request did not go on the channel")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if onLane(&runnerproto.Request{Exec: &runnerproto.ExecRequest{}}) || onLane(&runnerproto.Request{Attach: &runnerproto.AttachRequest{}}) || !onLane(read) || !onLane(&runnerproto.Request{Scan: &runnerproto.ScanRequest{}}) {
		t.Error("what goes on the lane")
	}
	r.Close()
}

// A lane that ends while a request is being written on it: the write fails, so the request
// was not sent there, and it goes on the channel instead; the call never gets the lane's
// "whether it was done is not known" for it, however the end of the write and the lane's
// reader interleave (200 rounds, the hang-up at a random moment of the write).
func TestLaneEndsWhileWriting(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for round := range 200 {
		r := newClient()
		ch := &recorder{}
		r.stdin, r.stop = ch, func() {}
		clientEnd, runnerEnd := net.Pipe() // a write blocks until the other end reads: nothing does
		r.UseLane(clientEnd)
		delay := time.Duration(rng.IntN(300)) * time.Microsecond
		go func() {
			time.Sleep(delay)
			runnerEnd.Close() // hangs up in the middle of the request's write
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got := make(chan error, 1)
		go func() {
			resp, err := r.call(ctx, &runnerproto.Request{Read: &runnerproto.ReadRequest{Path: tree.Name("/x"), Limit: 10}}, func(*runnerproto.Response) error { return nil })
			got <- result(resp, err)
		}()
		for ch.Len() == 0 {
			select {
			case err := <-got:
				cancel()
				r.Close()
				t.Fatalf("round %d (hang-up after %v): the call ended with %v, want its request on the channel", round, delay, err)
			case <-ctx.Done():
				t.Fatalf("round %d: the request never reached the channel", round)
			case <-time.After(time.Millisecond):
			}
		}
		cancel()
		<-got
		r.Close()
	}
}

// A fast lane that ends with reads on it (a read, a scan): they only read, so they are asked
// again on the channel, whose answers their calls get; no error.
func TestLaneEndsWithReadsAskedAgain(t *testing.T) {
	r := newClient()
	chR, chW := io.Pipe()
	r.stdin, r.stop = chW, func() {}
	clientEnd, runnerEnd := net.Pipe()
	r.UseLane(clientEnd)
	// The lane's runner takes two requests and hangs up unanswered; the channel's answers
	// every request it gets.
	var onTheLane atomic.Int64
	go func() {
		br := bufio.NewReader(runnerEnd)
		for range 2 {
			var req runnerproto.Request
			if runnerproto.ReadFrame(br, &req) == nil {
				onTheLane.Add(1)
			}
		}
		runnerEnd.Close()
	}()
	go func() {
		br := bufio.NewReader(chR)
		for {
			var req runnerproto.Request
			if runnerproto.ReadFrame(br, &req) != nil {
				return
			}
			resp := &runnerproto.Response{ID: req.ID}
			switch {
			case req.Read != nil:
				resp.Read = &runnerproto.ReadResult{Data: []byte("channel"), Size: 7}
			case req.Scan != nil:
				resp.Scan = &runnerproto.ScanResult{Entries: []tree.Entry{}}
			}
			r.mu.Lock()
			ch, ok := r.pending[resp.ID]
			delete(r.pending, resp.ID)
			r.mu.Unlock()
			if ok {
				ch <- resp
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := make(chan error, 2)
	for _, req := range []*runnerproto.Request{
		{Read: &runnerproto.ReadRequest{Path: tree.Name("/x"), Limit: 10}},
		{Scan: &runnerproto.ScanRequest{Root: "/x"}},
	} {
		go func() {
			resp, err := r.call(ctx, req, func(*runnerproto.Response) error { return nil })
			if err = result(resp, err); err == nil && req.Read != nil && string(resp.Read.Data) != "channel" {
				err = fmt.Errorf("read answered %q", resp.Read.Data)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("a read on the lane that ended: %v, want the channel's answer", err)
		}
	}
	if up, _ := r.Lane(); up || onTheLane.Load() != 2 {
		t.Errorf("lane up %v, %d requests read on it; want down after 2", up, onTheLane.Load())
	}
	r.Close()
}
