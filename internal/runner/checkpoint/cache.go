package checkpoint

import (
	"os"
	"sync"
	"syscall"
)

// Cache keeps, in a runner process, the manifests it read or wrote last and the object
// names it listed, each with the identity of its file or directory then, so that the next
// checkpoint or restore of a long-lived runner (the agent's serve) does not read and parse
// them again: on an emulated guest that is a third of a checkpoint's time. An entry is used
// only while its file's identity (device, inode, size, mtime, ctime) is unchanged, so a file
// the agent rewrote is read again, and checked as every read is.
type Cache struct {
	mu        sync.Mutex
	manifests map[string]cachedManifest // by path
	objects   map[string]cachedObjects  // by objects directory
}

// maxCachedManifests bounds the memory the cache holds (a 200,000-entry manifest is tens of MB).
const maxCachedManifests = 2

type fileKey struct {
	dev, ino            uint64
	size, mtime, ctimeN int64
}

type cachedManifest struct {
	key fileKey
	m   *ckptManifest
}

type cachedObjects struct {
	key   fileKey
	names map[string]bool
}

func NewCache() *Cache {
	return &Cache{manifests: map[string]cachedManifest{}, objects: map[string]cachedObjects{}}
}

// keyOf is the identity of what is at p, not following a link (ok false when it cannot be had).
func keyOf(p string) (fileKey, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileKey{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctimeN: st.Ctim.Nano()}, true
}

// manifest returns the cached manifest at p if its file is unchanged.
func (c *Cache) manifest(p string) *ckptManifest {
	if c == nil {
		return nil
	}
	k, ok := keyOf(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, hit := c.manifests[p]; ok && hit && e.key == k {
		return e.m
	}
	return nil
}

// putManifest remembers the (checked) manifest at p.
func (c *Cache) putManifest(p string, m *ckptManifest) {
	if c == nil {
		return
	}
	k, ok := keyOf(p)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for q := range c.manifests {
		if len(c.manifests) < maxCachedManifests {
			break
		}
		delete(c.manifests, q)
	}
	c.manifests[p] = cachedManifest{key: k, m: m}
}

// objectNames returns the cached names of dir if the directory is unchanged (an entry added
// or removed moves its mtime). The caller may not change the map it gets.
func (c *Cache) objectNames(dir string) map[string]bool {
	if c == nil {
		return nil
	}
	k, ok := keyOf(dir)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, hit := c.objects[dir]; ok && hit && e.key == k {
		return e.names
	}
	return nil
}

// putObjectNames remembers the names of dir as they are now.
func (c *Cache) putObjectNames(dir string, names map[string]bool) {
	if c == nil {
		return
	}
	k, ok := keyOf(dir)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.objects)
	c.objects[dir] = cachedObjects{key: k, names: names}
}
