package guest

import (
	"io/fs"
	"os"
	"path"

	"github.com/pkg/sftp"
)

// sftpFS is a read-only fs.FS over SFTP rooted at a guest directory, enough for
// doublestar's glob when the runner is not available.
type sftpFS struct {
	c    *sftp.Client
	root string
}

func (f sftpFS) full(name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return path.Join(f.root, name), nil
}

func (f sftpFS) Open(name string) (fs.File, error) {
	p, err := f.full(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.c.Stat(p)
	if err != nil {
		return nil, err
	}
	return &sftpFile{c: f.c, path: p, info: fi}, nil
}

// ReadDir lists a directory in one call (fs.ReadDirFS).
func (f sftpFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := f.full(name)
	if err != nil {
		return nil, err
	}
	infos, err := f.c.ReadDir(p)
	if err != nil {
		return nil, err
	}
	ents := make([]fs.DirEntry, len(infos))
	for i, fi := range infos {
		ents[i] = fs.FileInfoToDirEntry(fi)
	}
	return ents, nil
}

// Stat (fs.StatFS).
func (f sftpFS) Stat(name string) (fs.FileInfo, error) {
	p, err := f.full(name)
	if err != nil {
		return nil, err
	}
	return f.c.Stat(p)
}

// sftpFile is an opened name: only Stat and Close are needed by a glob.
type sftpFile struct {
	c    *sftp.Client
	path string
	info os.FileInfo
}

func (s *sftpFile) Stat() (fs.FileInfo, error) { return s.info, nil }
func (s *sftpFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: s.path, Err: fs.ErrInvalid}
}
func (s *sftpFile) Close() error { return nil }
