// Command gen builds the guest runner for every supported Linux architecture into gzipped
// files next to runnerbin.go, and records the hash of the sources they were built from.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerbin/sourcehash"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	out, err := os.Getwd() // go generate runs in the package directory
	if err != nil {
		return err
	}
	root := filepath.Join(out, "..", "..", "..")
	for _, arch := range []string{"amd64", "arm64"} {
		tmp := filepath.Join(os.TempDir(), "limactl-mcp-runner."+arch)
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", tmp, "./cmd/limactl-mcp-runner")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building for %s: %w", arch, err)
		}
		bin, err := os.ReadFile(tmp)
		if err != nil {
			return err
		}
		_ = os.Remove(tmp)
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		// The ID in the header: a start learns it (and the size, from the trailer) without
		// decompressing the binary (runnerbin.Info).
		// runnerbin.ID, computed here because runnerbin cannot build before its files exist;
		// TestBinaryForEachArch checks that the two agree.
		sum := sha256.Sum256(bin)
		zw.Header.Comment = hex.EncodeToString(sum[:6])
		zw.Write(bin)
		if err := zw.Close(); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "limactl-mcp-runner.linux-"+arch+".gz"), gz.Bytes(), 0o644); err != nil {
			return err
		}
	}
	sum, err := sourcehash.HashSources(root)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "source.sha256"), []byte(sum+"\n"), 0o644)
}
