package enforce

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/atomicfile"
)

// The session CAs in the system's bundle, without the distribution's tool.
//
// Debian's update-ca-certificates rebuilds the whole bundle (a shell loop of a few processes
// per certificate, then a rehash of /etc/ssl/certs): 24-27 s on the emulated test guest, paid
// by every session with secrets or HTTPS rules when it starts and again when it ends. The
// bundle is a concatenation of PEM certificates, so syncBundle puts the session CAs at its end
// itself, and takes out the ones that are gone, in milliseconds. The CA files stay in the
// tool's directory too (TrustDir), so that a rebuild by the tool (an upgrade of
// ca-certificates) keeps trusting the sessions that run. What syncBundle leaves out is the
// hash links of /etc/ssl/certs (a CApath lookup): OpenSSL, GnuTLS, Go and Python read the
// bundle file, and the agent's environment names it and the CA file (netpolicy.CAEnv).

// maxBundle caps the system bundle read (Debian's is about 220 KB), maxCAFile a session CA.
const (
	maxBundle = 16 << 20
	maxCAFile = 64 << 10
)

// bundleRecord is the file, root's, that holds what syncBundle last appended to the bundle.
func (l Layout) bundleRecord() string { return filepath.Join(l.ConfigDir, "ca-bundle-appended.pem") }

// errNotPlainBundle: the bundle is not a regular file of root's (a link, say); the tool then
// does the work.
var errNotPlainBundle = errors.New("the CA bundle is not a regular file of root's")

// syncBundle makes the end of the bundle hold exactly the session CAs of TrustDir, and the rest
// of it none of them, nor gone (the CA of a session that ended or changed CA, as it was). The
// blocks taken out wherever they are: what syncBundle appended last time, the session CAs of
// now (a rebuild by the tool put them among the others) and gone. One sync at a time.
func syncBundle(ctx context.Context, l Layout, gone []byte) error {
	unlock, err := lockUser(ctx, l.ConfigDir, "ca-bundle")
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := readOwnFile(l.TrustBundle, maxBundle)
	if err != nil {
		return err
	}
	ours, err := sessionCAs(l)
	if err != nil {
		return err
	}
	record, err := readOwnFile(l.bundleRecord(), maxBundle)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	base := cur
	if len(record) > 0 && bytes.HasSuffix(base, record) {
		base = base[:len(base)-len(record)]
	}
	var remove [][]byte
	remove = append(remove, pemForms(record)...)
	remove = append(remove, pemForms(gone)...)
	var chunk []byte
	for _, ca := range ours {
		remove = append(remove, pemForms(ca)...)
		chunk = append(chunk, certBlocks(ca)...)
	}
	for _, b := range remove {
		base = bytes.ReplaceAll(base, b, nil)
	}
	if len(base) > 0 && base[len(base)-1] != '\n' {
		base = append(base, '\n')
	}
	if next := append(base, chunk...); !bytes.Equal(next, cur) {
		if err := atomicfile.WriteFile(l.TrustBundle, next, 0o644, true); err != nil {
			return fmt.Errorf("writing %s: %w", l.TrustBundle, err)
		}
	}
	// After the bundle: a record older than the bundle only takes out blocks that are ours.
	if _, err := writeFileIfChanged(l.bundleRecord(), chunk, 0o600); err != nil {
		return fmt.Errorf("recording the session CAs in the bundle: %w", err)
	}
	return nil
}

// sessionCAs reads the session CAs installed in TrustDir, by file name.
func sessionCAs(l Layout) ([][]byte, error) {
	names, err := filepath.Glob(filepath.Join(l.TrustDir, "limactl-mcp-lmcp-*.crt"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var cas [][]byte
	for _, n := range names {
		b, err := readOwnFile(n, maxCAFile)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		cas = append(cas, b)
	}
	return cas, nil
}

// certBlocks is the CERTIFICATE blocks of a PEM file, each as encoding/pem writes it.
func certBlocks(data []byte) []byte {
	var out []byte
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if b.Type == "CERTIFICATE" {
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: b.Bytes})...)
		}
	}
}

// pemForms is what a CA file may look like in the bundle: each of its blocks as encoding/pem
// writes it, and the file as the tool appends it (its bytes, ending in a newline).
func pemForms(data []byte) [][]byte {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var forms [][]byte
	raw := append(bytes.TrimRight(bytes.Clone(data), "\n"), '\n')
	forms = append(forms, raw)
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		forms = append(forms, pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: b.Bytes}))
	}
	return forms
}

// readOwnFile reads the whole of a regular file of root's (this process's user's) that no other user may
// write, no link followed, at most limit bytes.
func readOwnFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s: %w", path, errNotPlainBundle)
		}
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !st.Mode().IsRegular() || !ok || int(sys.Uid) != os.Geteuid() || st.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%s: %w", path, errNotPlainBundle)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes", path, limit)
	}
	return b, nil
}
