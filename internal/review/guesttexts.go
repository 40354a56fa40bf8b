package review

import (
	"context"
	"sync"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

var (
	// guestTextsBatch bounds the bytes of the guest files one request reads (as the scan listed
	// their sizes): a 500-file change is a few requests, not 500 round trips.
	guestTextsBatch int64 = 4 << 20
	// guestTextsParallel bounds the requests in flight.
	guestTextsParallel = 4
	// guestTextsMax bounds the bytes read ahead in all: they are held until every item is
	// described (a change of a thousand 3 MB images must not take gigabytes); the files past it
	// are read one at a time, as they are described.
	guestTextsMax int64 = 64 << 20
)

// readGuestTexts reads, in a few requests, the changed guest files a review shows (files, as
// the scan listed them): by path, the bytes of each one read. A file the runner did not read
// (larger than MaxTextBytes now, not a regular file any more, over a request's bound) or a
// request that failed leaves its paths out: Build has the runner hash those, and describeItem
// reads those alone, and says why one cannot be. The bytes are the guest's: Build takes the
// hash that apply checks the guest against from them.
func readGuestTexts(ctx context.Context, sess *staging.Session, files []tree.Entry) map[string][]byte {
	var batches [][]tree.Name
	var cur []tree.Name
	var size, all int64
	for _, g := range files {
		if g.Type != tree.File || g.Size > MaxTextBytes || all+g.Size > guestTextsMax {
			continue
		}
		all += g.Size
		if len(cur) > 0 && size+g.Size > guestTextsBatch {
			batches, cur, size = append(batches, cur), nil, 0
		}
		cur, size = append(cur, g.Path), size+g.Size
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	out := map[string][]byte{}
	if len(batches) == 0 {
		return out
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, guestTextsParallel)
	for _, paths := range batches {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			// Room for files that grew since the scan: a file over it is read alone.
			datas, err := sess.ReadGuestFiles(ctx, paths, MaxTextBytes, 2*guestTextsBatch)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for i, d := range datas {
				if d != nil {
					out[string(paths[i])] = d
				}
			}
		}()
	}
	wg.Wait()
	return out
}
