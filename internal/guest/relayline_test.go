package guest

import (
	"context"
	"net"
	"strings"
	"testing"
)

// A connection that ends before its first byte is the guest's set-up asking whether this
// relay still answers (enforce's keptRelays): no error to log; one that ends within the
// proxy's line is an error, and nothing is served either way.
func TestRelayLineProbe(t *testing.T) {
	served := false
	s := &AgentSecrets{Serve: func(context.Context, net.Conn, string) error { served = true; return nil }}
	for _, tc := range []struct {
		sent    string
		wantErr string
	}{
		{"", ""},
		{"api.anthropic.com:4", "ended before its line"},
	} {
		relaySide, proxySide := net.Pipe()
		go func() {
			proxySide.Write([]byte(tc.sent))
			proxySide.Close()
		}()
		err := serveRelayConn(context.Background(), relaySide, s)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("sent %q: %v, want %q", tc.sent, err, tc.wantErr)
		}
	}
	if served {
		t.Error("a connection without a whole line was served")
	}
}
