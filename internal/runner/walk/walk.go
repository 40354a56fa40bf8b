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
	"syscall"

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
		ents, dir, err := readDir(abs, rel == "")
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
			fi, err := StatAt(dir, d.Name())
			if err != nil {
				continue // vanished
			}
			local = append(local, Entry{crel, fi})
			if d.IsDir() {
				wg.Add(1)
				go visit(filepath.Join(abs, d.Name()), crel)
			}
		}
		if dir != nil {
			dir.Close()
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

// readDir opens the directory abs and reads its entries, leaving it open for StatAt. Only
// the root may be reached through a link: a directory found in the walk and replaced since
// by a link is not followed (O_NOFOLLOW; os.ReadDir followed it). O_DIRECTORY, as
// os.ReadDir's, fails at once on a fifo put in its place instead of waiting for a writer.
// dir is nil when the open failed.
func readDir(abs string, isRoot bool) (ents []fs.DirEntry, dir *os.File, err error) {
	flags := os.O_RDONLY | syscall.O_DIRECTORY | syscall.O_CLOEXEC
	if !isRoot {
		flags |= syscall.O_NOFOLLOW
	}
	dir, err = os.OpenFile(abs, flags, 0)
	if err != nil {
		return nil, nil, err
	}
	ents, err = dir.ReadDir(-1)
	return ents, dir, err
}
