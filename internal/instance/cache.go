package instance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lima-vm/lima/v2/pkg/limatype"
	"github.com/lima-vm/lima/v2/pkg/limatype/dirnames"
	"github.com/lima-vm/lima/v2/pkg/limatype/filenames"

	"github.com/limactl-mcp/limactl-mcp/internal/fsutil"
)

// cacheFile is where InspectCached keeps the last answer, in the instance's own directory.
const cacheFile = "limactl-mcp/instance.json"

type cached struct {
	Instance *Instance         `json:"instance"`
	Seen     map[string]string `json:"seen"`
}

// InspectCached is Inspect for the commands, which must start within a fraction of a second
// (serve's first answer, shell): `limactl list` costs a limactl process. It returns the running instance as the
// last Inspect saw it when nothing Inspect's answer depends on has changed since: the same
// host agent still runs (its pid file, and that process), and limactl, the instance's
// lima.yaml and Lima's default.yaml and override.yaml are the same files (size and time).
// Otherwise it asks limactl, and remembers a running instance's answer.
func InspectCached(ctx context.Context, limactl, name string) (*Instance, error) {
	limaDir, err := dirnames.LimaDir()
	if err != nil || name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return Inspect(ctx, limactl, name)
	}
	dir := filepath.Join(limaDir, name)
	seen := fingerprint(limactl, dir)
	path := filepath.Join(dir, cacheFile)
	if data, err := os.ReadFile(path); err == nil && seen != nil {
		var c cached
		if json.Unmarshal(data, &c) == nil && c.Instance != nil && c.Instance.Name == name && c.Instance.Dir == dir && equal(c.Seen, seen) {
			return c.Instance, nil
		}
	}
	inst, err := Inspect(ctx, limactl, name)
	if err != nil {
		return nil, err
	}
	if inst.Status == limatype.StatusRunning && inst.Dir == dir && seen != nil {
		if data, err := json.Marshal(cached{Instance: inst, Seen: seen}); err == nil {
			if os.MkdirAll(filepath.Dir(path), 0o700) == nil {
				_ = fsutil.WriteFileAtomic(path, data, 0o600)
			}
		}
	} else {
		_ = os.Remove(path)
	}
	return inst, nil
}

// fingerprint is what the answer for the instance in dir depends on; nil when its host agent
// does not run.
func fingerprint(limactl, dir string) map[string]string {
	pidData, err := os.ReadFile(filepath.Join(dir, filenames.HostAgentPID))
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidData)))
	if err != nil || !processRuns(pid) {
		return nil
	}
	seen := map[string]string{"pid": strconv.Itoa(pid)}
	files := []string{limactl, filepath.Join(dir, filenames.HostAgentPID), filepath.Join(dir, filenames.LimaYAML)}
	if conf, err := dirnames.LimaConfigDir(); err == nil {
		files = append(files, filepath.Join(conf, filenames.Default), filepath.Join(conf, filenames.Override))
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			seen[f] = fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
		} else {
			seen[f] = "absent"
		}
	}
	return seen
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
