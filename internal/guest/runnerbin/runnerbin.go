// Package runnerbin embeds the guest runner (cmd/limactl-mcp-runner), built for each Linux
// architecture a Lima guest can have, so that a host on any OS can copy it into its guest.
//
// The binaries are generated (`go generate ./internal/guest/runnerbin`) and checked in, so
// that `go install` works; a test fails when they are older than the runner's source.
package runnerbin

//go:generate go run ./gen

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

//go:embed limactl-mcp-runner.*.gz source.sha256
var files embed.FS

// Arch normalizes an architecture name as reported by `uname -m`, Lima or Go to Go's GOARCH.
func Arch(name string) string {
	switch strings.ToLower(name) {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	}
	return strings.ToLower(name)
}

// Binary returns the runner for a Linux guest of the given architecture and a short ID that
// changes whenever the binary does.
func Binary(arch string) (data []byte, id string, err error) {
	goarch := Arch(arch)
	gz, err := files.ReadFile("limactl-mcp-runner.linux-" + goarch + ".gz")
	if err != nil {
		return nil, "", fmt.Errorf("no guest runner for architecture %q (have amd64, arm64)", arch)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, "", err
	}
	data, err = io.ReadAll(zr)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:6]), nil
}

// SourceHash is the hash of the runner's source the embedded binaries were built from.
func SourceHash() string {
	b, _ := files.ReadFile("source.sha256")
	return strings.TrimSpace(string(b))
}
