package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// A manifest is lines, not JSON: it is read at every checkpoint (the previous one's,
// to know unchanged files) and every restore, and a line format of 10,000 entries parses
// several times faster than encoding/json with tree.Name's own decoding; not compressed, as
// gzip costs a tenth of a second each way on an emulated guest (10,000 entries are about
// 1.3 MB). Names are any bytes (quoted as Go quotes them), so a name with a newline or invalid
// UTF-8 survives.
//
//	limactl-mcp-checkpoint 1
//	info {"id":"3",...}                                 the CkptInfo, as JSON
//	f MODE SIZE MTIME CTIME INO HASH "path"             a file (MODE in octal)
//	d MODE "path"                                       a directory
//	l "path" "target"                                   a symlink

// ManifestHeader is the first line of every manifest.
const ManifestHeader = "limactl-mcp-checkpoint 1"

// maxManifestLine bounds one line (a path and a link target of 4 KiB each, quoted).
const maxManifestLine = 64 << 10

// writeManifest stores a checkpoint's manifest.
func (s *ckptStore) writeManifest(m *ckptManifest) error {
	info, err := json.Marshal(m.Info)
	if err != nil {
		return err
	}
	p := s.manifestPath(m.Info.ID)
	err = writeManifestAt(p, m, info)
	if err == nil {
		s.cache.putManifest(p, m)
	}
	return err
}

// writeManifestAt writes m's lines (info: its CkptInfo as JSON) to a new file renamed to p.
func writeManifestAt(p string, m *ckptManifest, info []byte) error {
	return writeAtomic(p, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		fmt.Fprintf(bw, "%s\ninfo %s\n", ManifestHeader, info)
		var line []byte
		for _, e := range m.Entries {
			line = line[:0]
			switch e.Type {
			case tree.File:
				line = append(line, "f "...)
				line = strconv.AppendUint(line, uint64(e.Mode), 8)
				for _, n := range []int64{e.Size, e.MTime, e.CTime} {
					line = append(line, ' ')
					line = strconv.AppendInt(line, n, 10)
				}
				line = append(line, ' ')
				line = strconv.AppendUint(line, e.Ino, 10)
				line = append(line, ' ')
				line = append(line, e.Hash...)
			case tree.Dir:
				line = append(line, "d "...)
				line = strconv.AppendUint(line, uint64(e.Mode), 8)
			case tree.Symlink:
				line = append(line, 'l')
			default:
				return fmt.Errorf("a manifest entry of type %q", e.Type)
			}
			line = append(line, ' ')
			line = strconv.AppendQuote(line, string(e.Path))
			if e.Type == tree.Symlink {
				line = append(line, ' ')
				line = strconv.AppendQuote(line, string(e.Target))
			}
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
}

// readManifest reads and checks checkpoint id's manifest.
func (s *ckptStore) readManifest(id string, maxEntries int) (*ckptManifest, error) {
	if !ckptIDPattern.MatchString(id) {
		return nil, fmt.Errorf("%q is not a checkpoint id", id)
	}
	if maxEntries <= 0 || maxEntries > ckptHardMaxEntry {
		maxEntries = ckptHardMaxEntry
	}
	p := s.manifestPath(id)
	if m := s.cache.manifest(p); m != nil && m.Info.ID == id && len(m.Entries) <= maxEntries {
		return m, nil
	}
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, corrupt("checkpoint %s has no manifest", id)
		}
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, corrupt("checkpoint %s's manifest is not a regular file", id)
	}
	m, err := parseManifest(io.LimitReader(f, maxCkptManifest), maxEntries)
	if err != nil {
		return nil, corrupt("checkpoint %s's manifest: %v", id, err)
	}
	if m.Info.ID != id {
		return nil, corrupt("checkpoint %s's manifest says it is %q", id, m.Info.ID)
	}
	if err := checkManifestEntries(m.Entries, maxEntries); err != nil {
		return nil, corrupt("checkpoint %s: %v", id, err)
	}
	s.cache.putManifest(p, m)
	return m, nil
}

// parseManifest reads the lines of a manifest: at most max entries, each line at most
// maxManifestLine bytes. It checks the syntax only (checkManifestEntries the meaning).
func parseManifest(r io.Reader, max int) (*ckptManifest, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxManifestLine)
	if !sc.Scan() || sc.Text() != ManifestHeader {
		return nil, fmt.Errorf("not a manifest (no %q line)", ManifestHeader)
	}
	if !sc.Scan() || !bytes.HasPrefix(sc.Bytes(), []byte("info ")) {
		return nil, errors.New("no info line")
	}
	m := &ckptManifest{}
	if err := json.Unmarshal(sc.Bytes()[len("info "):], &m.Info); err != nil {
		return nil, fmt.Errorf("info: %v", err)
	}
	for n := 3; sc.Scan(); n++ {
		if len(m.Entries) >= max {
			return nil, fmt.Errorf("more than %d entries", max)
		}
		e, err := parseManifestLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		m.Entries = append(m.Entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func parseManifestLine(line string) (ckptEntry, error) {
	var e ckptEntry
	kind, rest, ok := strings.Cut(line, " ")
	if !ok {
		return e, errors.New("no fields")
	}
	field := func() string {
		f, r, _ := strings.Cut(rest, " ")
		rest = r
		return f
	}
	num := func(bits int) (int64, error) { return strconv.ParseInt(field(), 10, bits) }
	var err error
	switch kind {
	case "f":
		e.Type = tree.File
		var mode uint64
		if mode, err = strconv.ParseUint(field(), 8, 32); err != nil {
			return e, err
		}
		e.Mode = uint32(mode)
		if e.Size, err = num(64); err != nil {
			return e, err
		}
		if e.MTime, err = num(64); err != nil {
			return e, err
		}
		if e.CTime, err = num(64); err != nil {
			return e, err
		}
		if e.Ino, err = strconv.ParseUint(field(), 10, 64); err != nil {
			return e, err
		}
		e.Hash = field()
	case "d":
		e.Type = tree.Dir
		var mode uint64
		if mode, err = strconv.ParseUint(field(), 8, 32); err != nil {
			return e, err
		}
		e.Mode = uint32(mode)
	case "l":
		e.Type = tree.Symlink
		e.Mode = 0o777
	default:
		return e, fmt.Errorf("unknown entry type %.10q", kind)
	}
	p, err := unquotePrefix(&rest)
	if err != nil {
		return e, fmt.Errorf("path: %v", err)
	}
	e.Path = tree.Name(p)
	if e.Type == tree.Symlink {
		if !strings.HasPrefix(rest, " ") {
			return e, errors.New("no link target")
		}
		rest = rest[1:]
		t, err := unquotePrefix(&rest)
		if err != nil {
			return e, fmt.Errorf("link target: %v", err)
		}
		e.Target = tree.Name(t)
	}
	if rest != "" {
		return e, errors.New("trailing text")
	}
	return e, nil
}

// unquotePrefix unquotes the Go-quoted string at the start of *s and moves *s past it.
func unquotePrefix(s *string) (string, error) {
	q, err := strconv.QuotedPrefix(*s)
	if err != nil {
		return "", err
	}
	*s = (*s)[len(q):]
	return strconv.Unquote(q)
}
