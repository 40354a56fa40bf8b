package secrets

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Files of a CA in its directory.
const (
	CAKeyFile  = "secrets-ca.key" // 0600, never leaves the host
	CACertFile = "secrets-ca.pem" // what the guest trusts
)

// Lifetimes of the session CA and of the leaves it mints.
const (
	caLifetime   = 90 * 24 * time.Hour
	leafLifetime = 7 * 24 * time.Hour
	// A leaf this close to its end is minted again.
	leafRenew = 24 * time.Hour
)

// CA is a session's certificate authority: the relay presents leaves it mints for the bound
// hosts, and the guest trusts its certificate. Its name constraints permit only the bound
// hosts (and, as X.509 has it, names under them), so a guest that trusts it trusts nothing
// else on its account.
type CA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
	hosts   []string // bound DNS names, no port

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// OpenCA loads the CA kept in dir (made by an earlier OpenCA of the same session) when it is
// valid for a while yet and its constraints hold these hosts (host or host:port), and
// otherwise makes one there: the key 0600, written without following a link. dir must exist
// and be the host's, not the guest's.
//
// The session's processes share the CA's key (each binds its own hosts, and the guest trusts
// one certificate per session): a process that binds a host the certificate does not permit
// makes a new certificate for the same key, permitting the hosts of both, and the relays of
// the processes already running go on signing with the key they hold; their leaves verify
// against the new certificate (the same subject and key) as against the old one. A key is
// replaced only when its certificate nears its end.
func OpenCA(dir string, hosts []string) (*CA, error) {
	names := hostNames(hosts)
	if len(names) == 0 {
		return nil, errors.New("secrets CA: no bound host")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("secrets CA: %w", err)
	}
	defer root.Close()
	kept, err := loadCA(root)
	switch {
	case err == nil && time.Until(kept.cert.NotAfter) >= leafLifetime:
		if permits(kept.cert.PermittedDNSDomains, names) {
			kept.hosts = names
			return kept, nil
		}
		union := hostNames(append(slices.Clone(kept.cert.PermittedDNSDomains), names...))
		if len(union) <= maxCANames {
			ca, err := issueCA(kept.key, union, kept.cert.NotAfter)
			if err != nil {
				return nil, err
			}
			if err := writeFile(root, CACertFile, ca.certPEM, 0o644); err != nil {
				return nil, fmt.Errorf("secrets CA: writing its certificate in %s: %w", dir, err)
			}
			ca.hosts = names
			return ca, nil
		}
	case err == nil, errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("secrets CA in %s: %w (remove %s and %s to make a new one)", dir, err, CAKeyFile, CACertFile)
	}
	ca, keyPEM, err := newCA(names)
	if err != nil {
		return nil, err
	}
	if err := writeFile(root, CAKeyFile, keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("secrets CA: writing its key in %s: %w", dir, err)
	}
	if err := writeFile(root, CACertFile, ca.certPEM, 0o644); err != nil {
		return nil, fmt.Errorf("secrets CA: writing its certificate in %s: %w", dir, err)
	}
	return ca, nil
}

// maxCANames bounds the names a session's certificate permits (netpolicy's cap on bound hosts
// and rule targets); beyond it a new key is made for the hosts of the process at hand.
const maxCANames = 64

// permits says whether every one of names is in permitted.
func permits(permitted, names []string) bool {
	for _, n := range names {
		if !slices.Contains(permitted, n) {
			return false
		}
	}
	return true
}

// hostNames are the DNS names of host:port list, sorted, once each.
func hostNames(hosts []string) []string {
	var names []string
	for _, h := range hosts {
		name := h
		if host, _, err := net.SplitHostPort(h); err == nil {
			name = host
		}
		name = strings.ToLower(name)
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func newCA(names []string) (*CA, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ca, err := issueCA(key, names, time.Now().Add(caLifetime))
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return ca, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// issueCA makes the session CA's self-signed certificate for key, permitting names, valid
// until notAfter. Its subject is always the same and its key identifier is the key's (Go
// derives it), so that a leaf signed by key chains to any certificate issued for it.
func issueCA(key *ecdsa.PrivateKey, names []string, notAfter time.Time) (*CA, error) {
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "limactl-mcp session secrets CA", Organization: []string{"limactl-mcp"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		// Only the bound hosts: a leaf for any other name fails verification in every client
		// that checks name constraints (Go, OpenSSL: curl, Python, Node, git).
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         names,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("secrets CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key, hosts: names, leaves: map[string]*tls.Certificate{}}, nil
}

// loadCA reads the CA in root (fs.ErrNotExist when there is none); its hosts are the names
// its certificate permits.
func loadCA(root *os.Root) (*CA, error) {
	keyPEM, err := readRootFile(root, CAKeyFile, 0o077)
	if err != nil {
		return nil, err
	}
	certPEM, err := readRootFile(root, CACertFile, 0o022)
	if err != nil {
		return nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	cb, _ := pem.Decode(certPEM)
	if kb == nil || cb == nil {
		return nil, errors.New("not PEM")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, errors.New("the key is not the certificate's")
	}
	if !cert.IsCA || len(cert.PermittedDNSDomains) == 0 {
		return nil, errors.New("the certificate is not a CA limited to the bound hosts")
	}
	return &CA{cert: cert, certPEM: certPEM, key: key, hosts: slices.Clone(cert.PermittedDNSDomains), leaves: map[string]*tls.Certificate{}}, nil
}

// readRootFile reads a small regular file of root, refusing one whose mode has any of badPerm
// (a key others can read is not kept secret).
func readRootFile(root *os.Root, name string, badPerm fs.FileMode) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > 64<<10 {
		return nil, fmt.Errorf("%s: not a small regular file", name)
	}
	if st.Mode().Perm()&badPerm != 0 {
		return nil, fmt.Errorf("%s: mode %v is too open", name, st.Mode().Perm())
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, err
	}
	return b, nil
}

// writeFile writes name in root through a new temporary file renamed over it (root never
// follows a link out of dir; the temporary is made with O_EXCL).
func writeFile(root *os.Root, name string, data []byte, perm fs.FileMode) error {
	tmp := fmt.Sprintf(".%s.%x.tmp", name, serial())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err2 := f.Chmod(perm); err == nil {
		err = err2
	}
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// CertPEM is the CA's certificate, for the guest's trust store.
func (ca *CA) CertPEM() []byte { return slices.Clone(ca.certPEM) }

// Certificate is the CA's certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// Leaf returns a certificate for host (a bound DNS name), minted on first use and kept until
// near its end. A host the CA is not for gets an error, never a certificate.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	host = strings.ToLower(host)
	if !slices.Contains(ca.hosts, host) {
		return nil, fmt.Errorf("secrets CA: %q is not a bound host", host)
	}
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok && time.Until(c.Leaf.NotAfter) > leafRenew {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notAfter := now.Add(leafLifetime)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("secrets CA: a leaf for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key, Leaf: leaf}
	ca.leaves[host] = c
	return c, nil
}
