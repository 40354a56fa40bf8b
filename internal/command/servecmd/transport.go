package servecmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/httpauth"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

// HTTPOptions configure the Streamable HTTP transport (serve --http).
type HTTPOptions struct {
	Addr        string // HOST:PORT; "" serves over stdio
	AllowRemote bool   // allow a non-loopback HOST
	TokenFile   string // where the bearer token is (or is to be written)
}

// Validate checks the flags without side effects.
func (o *HTTPOptions) Validate() error {
	if o.Addr == "" {
		switch {
		case o.AllowRemote:
			return errors.New("--http-allow-remote needs --http")
		case o.TokenFile != "":
			return errors.New("--http-token-file needs --http")
		}
		return nil
	}
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return fmt.Errorf("--http %q: want HOST:PORT, such as 127.0.0.1:8080 (port 0 picks a free port)", o.Addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("--http %q: the port must be a number from 0 to 65535", o.Addr)
	}
	if !o.AllowRemote && !isLoopbackHost(host) {
		what := fmt.Sprintf("%q is not a loopback address", host)
		if host == "" {
			what = "an empty host means every network interface"
		}
		return fmt.Errorf("--http %q: %s; whoever can reach it and has the token runs commands in the instance. "+
			"Use 127.0.0.1, ::1 or localhost, or add --http-allow-remote to listen there anyway", o.Addr, what)
	}
	return nil
}

// isLoopbackHost reports whether host is "localhost" or a loopback IP address (127.0.0.0/8, ::1).
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// terminalNote is for a person who runs serve in a terminal and types at it.
const terminalNote = "This is an MCP server for an AI agent: it reads JSON-RPC messages on standard input, not commands.\n" +
	"Let the agent start it: `limactl mcp configure claude` (or gemini, codex, cursor) writes the agent's MCP configuration\n" +
	"for this directory. To look at the tools by hand, use an MCP client such as `npx @modelcontextprotocol/inspector`.\n" +
	"Press Ctrl-C to quit."

// serveTransport runs server over stdio, or over HTTP when --http is given.
func serveTransport(ctx context.Context, ios *iostreams.IOStreams, log *slog.Logger, server *mcp.Server, opts *HTTPOptions) error {
	if opts.Addr == "" {
		if ios.IsStdinTTY() {
			fmt.Fprintln(ios.ErrOut, terminalNote)
		}
		err := server.Run(ctx, stdioTransport(ios.In, ios.RawOut()))
		if err != nil && ios.IsStdinTTY() {
			return fmt.Errorf("%w\n%s", err, terminalNote)
		}
		return err
	}
	if err := opts.Validate(); err != nil {
		return err
	}

	var token, tokenNote string
	if opts.TokenFile != "" {
		t, created, readableByOthers, err := httpauth.TokenFromFile(opts.TokenFile)
		if err != nil {
			return err
		}
		if readableByOthers {
			log.Warn("the token file can be read by other users than its owner (chmod 600 it)", "file", opts.TokenFile)
		}
		token, tokenNote = t, "in "+opts.TokenFile
		if created {
			tokenNote = "new, written to " + opts.TokenFile
		}
	} else {
		t, err := httpauth.NewToken()
		if err != nil {
			return err
		}
		token, tokenNote = t, t
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	// One line, printed once, for a person or a script to pick up (stdout stays silent).
	fmt.Fprintf(ios.ErrOut, "MCP endpoint: %s  bearer token: %s\n", endpointURL(ln.Addr()), tokenNote)
	return serveHTTP(ctx, ln, server, token, log)
}
