// Package walk lists a tree in the guest the way a scan and a checkpoint both see it: not
// following symlinks, never entering .git at the root, skipping what the ignore rules skip,
// reading several directories at once. It only lists: what an entry is (tree.EntryOf) and what
// is done with it are its callers'.
package walk

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/limactl-mcp/limactl-mcp/internal/ignore"
)

// Workers is how many directories are read at once: a walk is mostly lstat calls, which an
// emulated guest runs faster side by side on its vCPUs.
const Workers = 4

// Entry is one path found, relative to the root (slash-separated), and its lstat.
type Entry struct {
	Rel  string
	Info fs.FileInfo
}

// Parallel lists the tree under root (not following symlinks, never entering .git at the
// root, skipping what m ignores), in no particular order; a directory that cannot be read is
// added to errs ("DIR: error").
func Parallel(root string, m *ignore.Matcher, errs *[]string) []Entry {
	var (
		mu  sync.Mutex
		out []Entry
		wg  sync.WaitGroup
		sem = make(chan struct{}, Workers)
	)
	var visit func(abs, rel string)
	visit = func(abs, rel string) {
		defer wg.Done()
		sem <- struct{}{}
		ents, err := os.ReadDir(abs)
		var local []Entry
		for _, d := range ents {
			crel := d.Name()
			if rel != "" {
				crel = rel + "/" + d.Name()
			}
			if d.IsDir() && crel == ".git" {
				continue
			}
			if m.Ignored(crel, d.IsDir()) {
				continue
			}
			fi, err := d.Info()
			if err != nil {
				continue // vanished
			}
			local = append(local, Entry{crel, fi})
			if d.IsDir() {
				wg.Add(1)
				go visit(filepath.Join(abs, d.Name()), crel)
			}
		}
		<-sem
		mu.Lock()
		out = append(out, local...)
		if err != nil {
			*errs = append(*errs, abs+": "+err.Error())
		}
		mu.Unlock()
	}
	wg.Add(1)
	go visit(root, "")
	wg.Wait()
	return out
}
