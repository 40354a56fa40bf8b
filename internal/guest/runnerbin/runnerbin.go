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
	"encoding/binary"
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
	gz, err := compressed(arch)
	if err != nil {
		return nil, "", err
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, "", err
	}
	data, err = io.ReadAll(zr)
	if err != nil {
		return nil, "", err
	}
	return data, ID(data), nil
}

// Info returns what Binary would, less the bytes: the ID, from the gzip header (where the
// generator writes it), and the size, from the gzip trailer, without decompressing 3.3 MB.
func Info(arch string) (id string, size int64, err error) {
	gz, err := compressed(arch)
	if err != nil {
		return "", 0, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return "", 0, err
	}
	if len(zr.Header.Comment) != 12 || len(gz) < 8 {
		return "", 0, fmt.Errorf("the embedded runner for %s has no ID: run `go generate ./internal/guest/runnerbin`", arch)
	}
	return zr.Header.Comment, int64(binary.LittleEndian.Uint32(gz[len(gz)-4:])), nil
}

// ID is the short ID of a runner binary: the first 6 bytes of its SHA-256, in hex.
func ID(bin []byte) string {
	sum := sha256.Sum256(bin)
	return hex.EncodeToString(sum[:6])
}

func compressed(arch string) ([]byte, error) {
	gz, err := files.ReadFile("limactl-mcp-runner.linux-" + Arch(arch) + ".gz")
	if err != nil {
		return nil, fmt.Errorf("no guest runner for architecture %q (have amd64, arm64)", arch)
	}
	return gz, nil
}

// SourceHash is the hash of the runner's source the embedded binaries were built from.
func SourceHash() string {
	b, _ := files.ReadFile("source.sha256")
	return strings.TrimSpace(string(b))
}
