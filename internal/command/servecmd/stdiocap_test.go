package servecmd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// A message over the stdio limit gets a JSON-RPC error that says what to do, for its own id,
// and the server reads on: the next call is answered. (The go-sdk's own transport stopped
// reading at such a message, and the agent saw a dead server.)
func TestStdioOversizedMessage(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- newEchoServer().Run(ctx, stdioTransport(inR, outW)) }()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = inR.Close() // unblocks a write the server does not read
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop")
		}
	})
	replies := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				replies <- m
			}
		}
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	reply := func(id float64) map[string]any {
		t.Helper()
		for {
			select {
			case m := <-replies:
				if m["id"] == id {
					return m
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no reply to id %v", id)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	reply(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	big := strings.Repeat("x", stdioMaxMessage+100)
	// Sent in the background: a server that stops reading must fail the test, not hang it.
	go func() {
		for _, msg := range []string{
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + big + `"}}}`,
			// An id after the parameters cannot be found: the message is dropped, and the
			// server still reads on.
			`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"` + big + `"}},"id":3}`,
			`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`,
		} {
			if _, err := io.WriteString(inW, msg+"\n"); err != nil {
				return
			}
		}
	}()
	m := reply(2)
	e, _ := m["error"].(map[string]any)
	if msg, _ := e["message"].(string); !strings.Contains(msg, "message too large") || !strings.Contains(msg, "write a large file in parts") {
		t.Errorf("reply to the oversized call: %v", m)
	}
	m = reply(4)
	if res, _ := json.Marshal(m["result"]); !strings.Contains(string(res), "echo: after") {
		t.Errorf("the call after the oversized ones: %v", m)
	}
}
