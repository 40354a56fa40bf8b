package secrets

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// The cost of the relay against the plain proxy's opaque tunnel, both through the same
// stand-in front on loopback to a fake provider: a request on a kept-alive connection (the
// added latency of an injected request), and a request on a new connection each time (the
// handshake cost: the relay does two handshakes, the guest's and the provider's, where the
// tunnel passes one through). The far cases put the provider 20 ms away (each turnaround): the
// tunnel pays the provider's handshake on every new connection, the relay only on its first
// (it keeps its connections to the provider: upstreampool.go).
//
//	go test -run '^$' -bench . -benchtime 2s ./internal/secrets/
func BenchmarkRelay(b *testing.B) {
	for _, bc := range []struct {
		name      string
		url       string
		keepAlive bool
		rtt       time.Duration
	}{
		{"request/injected", "https://api.anthropic.com/v1/messages", true, 0},
		{"request/tunnel", "https://uploads.example.net/v1/messages", true, 0},
		{"newconn/injected", "https://api.anthropic.com/v1/messages", false, 0},
		{"newconn/tunnel", "https://uploads.example.net/v1/messages", false, 0},
		{"newconn-far/injected", "https://api.anthropic.com/v1/messages", false, 20 * time.Millisecond},
		{"newconn-far/tunnel", "https://uploads.example.net/v1/messages", false, 20 * time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(b)
			h.rtt = bc.rtt
			c := h.client()
			c.Transport.(*http.Transport).DisableKeepAlives = !bc.keepAlive
			defer c.CloseIdleConnections()
			do := func() {
				req, _ := http.NewRequest("POST", bc.url, nil)
				req.Header.Set("X-Api-Key", h.ph["ANTHROPIC_API_KEY"])
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			do() // the first connection and the leaf outside the timing
			for b.Loop() {
				do()
			}
		})
	}
}
