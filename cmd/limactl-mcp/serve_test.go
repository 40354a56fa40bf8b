package main

import (
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/servecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

// TestServeHTTPFlags checks the --http flags of `serve` before anything else runs.
func TestServeHTTPFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string // "" = the flags are accepted
	}{
		{[]string{"--http", "127.0.0.1:0"}, ""},
		{[]string{"--http", "127.1.2.3:8080"}, ""},
		{[]string{"--http", "[::1]:0"}, ""},
		{[]string{"--http", "localhost:0"}, ""},
		{[]string{"--http", "LocalHost:0", "--http-token-file", "/nonexistent/t"}, ""},
		{[]string{"--http", "10.1.2.3:8080"}, `"10.1.2.3" is not a loopback address`},
		{[]string{"--http", "192.168.0.1:0"}, "--http-allow-remote"},
		{[]string{"--http", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"--http", "[::]:0"}, "not a loopback address"},
		{[]string{"--http", "example.com:80"}, "not a loopback address"},
		{[]string{"--http", "localhost.example.com:80"}, "not a loopback address"},
		{[]string{"--http", ":8080"}, "every network interface"},
		{[]string{"--http", "10.1.2.3:8080", "--http-allow-remote"}, ""},
		{[]string{"--http", ":0", "--http-allow-remote"}, ""},
		{[]string{"--http", "127.0.0.1"}, "want HOST:PORT"},
		{[]string{"--http", "127.0.0.1:http"}, "port must be a number"},
		{[]string{"--http", "127.0.0.1:65536"}, "port must be a number"},
		{[]string{"--http-allow-remote"}, "--http-allow-remote needs --http"},
		{[]string{"--http-token-file", "t"}, "--http-token-file needs --http"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := servecmd.NewCmd(cmdutil.New(nil), nil)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			// The flags land in the command's own options: check through its PreRunE.
			err := cmd.PreRunE(cmd, nil)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}

	t.Run("execute", func(t *testing.T) {
		// The whole command stops at the flags: no instance, no staging.
		ios, _, out, errOut := iostreams.Test()
		cmd := servecmd.NewCmd(cmdutil.New(ios), nil)
		cmd.SetArgs([]string{"--http", "10.1.2.3:8080", "no-such-instance"})
		cmd.SetOut(out)
		cmd.SetErr(errOut)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
			t.Fatalf("error %v, want a non-loopback address error", err)
		}
		if out.Len() != 0 {
			t.Errorf("stdout: %q", out.String())
		}
	})
}
