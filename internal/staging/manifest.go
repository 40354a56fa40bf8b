package staging

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"sort"

	"github.com/limactl-mcp/limactl-mcp/internal/fsutil"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Manifest is a tree's entries sorted by path. It excludes .git, which is staged but never
// reviewed.
type Manifest struct {
	Entries []tree.Entry `json:"entries"`
}

// Sort orders the entries by path.
func (m *Manifest) Sort() {
	sort.Slice(m.Entries, func(i, j int) bool { return m.Entries[i].Path < m.Entries[j].Path })
}

// Index maps paths to entries.
func (m *Manifest) Index() map[tree.Name]*tree.Entry {
	idx := make(map[tree.Name]*tree.Entry, len(m.Entries))
	for i := range m.Entries {
		idx[m.Entries[i].Path] = &m.Entries[i]
	}
	return idx
}

// Update returns a copy of m with the entries of set in place of its own: a nil entry removes
// the path.
func (m *Manifest) Update(set map[tree.Name]*tree.Entry) *Manifest {
	idx := m.Index()
	for p, e := range set {
		if e == nil {
			delete(idx, p)
		} else {
			idx[p] = e
		}
	}
	out := &Manifest{Entries: make([]tree.Entry, 0, len(idx))}
	for _, e := range idx {
		out.Entries = append(out.Entries, *e)
	}
	out.Sort()
	return out
}

// Files counts regular files and sums their sizes.
func (m *Manifest) Files() (n int, bytes int64) {
	for _, e := range m.Entries {
		if e.Type == tree.File {
			n++
			bytes += e.Size
		}
	}
	return n, bytes
}

// LoadManifest reads a gzipped JSON manifest.
func LoadManifest(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// Save writes the manifest atomically.
func (m *Manifest) Save(path string) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(m); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, buf.Bytes(), 0o600)
}
