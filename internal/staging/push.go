package staging

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Progress reports a transfer.
type Progress struct {
	Files, TotalFiles int
	Bytes, TotalBytes int64
	Elapsed           time.Duration
}

// Rate is bytes per second so far.
func (p Progress) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Bytes) / p.Elapsed.Seconds()
}

// push streams entries of the host tree at workdir into guestDir as one tar archive over one
// SSH channel, and fills in the hashes of the files it sent. Entries that vanished or changed
// type on the host since they were selected are dropped from the returned list.
func push(ctx context.Context, conn *guest.Conn, workdir, guestDir string, entries []tree.Entry, progress func(Progress)) ([]tree.Entry, error) {
	total := Progress{}
	for _, e := range entries {
		if e.Type == tree.File {
			total.TotalFiles++
			total.TotalBytes += e.Size
		}
	}
	pr, pw := io.Pipe()
	sent := make([]tree.Entry, 0, len(entries))
	start := time.Now()
	go func() {
		// Large writes: each one becomes SSH packets the guest's sshd must decrypt, and small
		// packets (a 512-byte header, a small file) cost an emulated guest dearly.
		bw := bufio.NewWriterSize(pw, 1<<20)
		tw := tar.NewWriter(bw)
		last := time.Time{}
		for _, e := range entries {
			if ctx.Err() != nil {
				pw.CloseWithError(ctx.Err())
				return
			}
			ok, err := writeEntry(tw, workdir, &e)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			if !ok {
				continue
			}
			sent = append(sent, e)
			if e.Type == tree.File {
				total.Files++
				total.Bytes += e.Size
			}
			if progress != nil && time.Since(last) > 250*time.Millisecond {
				last = time.Now()
				total.Elapsed = time.Since(start)
				progress(total)
			}
		}
		err := tw.Close()
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	// GNU tar and busybox tar both read this; -p keeps modes, -m is not given so times stay.
	script := "mkdir -p " + shellquote.Quote(guestDir) + " && cd " + shellquote.Quote(guestDir) + " && tar -x -p -f -"
	if _, err := conn.Stream(ctx, script, pr); err != nil {
		pr.CloseWithError(err)
		return nil, fmt.Errorf("unpacking in the guest: %w", err)
	}
	if progress != nil {
		total.Elapsed = time.Since(start)
		progress(total)
	}
	return sent, nil
}

// writeEntry adds one entry to the archive, hashing a file's content on the way.
func writeEntry(tw *tar.Writer, workdir string, e *tree.Entry) (bool, error) {
	full := filepath.Join(workdir, filepath.FromSlash(string(e.Path)))
	hdr := &tar.Header{
		Name:    string(e.Path),
		Mode:    int64(e.Mode),
		ModTime: time.Unix(0, e.MTime),
		Format:  tar.FormatGNU,
	}
	switch e.Type {
	case tree.Dir:
		hdr.Typeflag, hdr.Name, hdr.ModTime = tar.TypeDir, hdr.Name+"/", time.Now().Truncate(time.Second)
		return true, tw.WriteHeader(hdr)
	case tree.Symlink:
		hdr.Typeflag, hdr.Linkname, hdr.ModTime = tar.TypeSymlink, string(e.Target), time.Now().Truncate(time.Second)
		return true, tw.WriteHeader(hdr)
	}
	f, err := os.Open(full)
	if err != nil {
		return false, nil // vanished since it was listed
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false, nil
	}
	// The size may have changed since the listing: send what is there now.
	e.Size = fi.Size()
	e.MTime = fi.ModTime().Truncate(time.Second).UnixNano()
	hdr.Typeflag, hdr.Size, hdr.ModTime = tar.TypeReg, e.Size, time.Unix(0, e.MTime)
	if err := tw.WriteHeader(hdr); err != nil {
		return false, err
	}
	h := tree.NewHasher()
	n, err := io.Copy(io.MultiWriter(tw, h), io.LimitReader(f, e.Size))
	if err != nil {
		return false, err
	}
	if n < e.Size {
		// Shrunk while being read: pad, and record what the guest really got.
		if _, err := tw.Write(make([]byte, e.Size-n)); err != nil {
			return false, err
		}
		h.Write(make([]byte, e.Size-n))
	}
	e.Hash = h.Sum()
	return true, nil
}
