package enforce

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testCAPEM(t *testing.T, name string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// bundleNames is the common names of the bundle's certificates, in order.
func bundleNames(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatalf("a block of the bundle does not parse: %v", err)
		}
		names = append(names, c.Subject.CommonName)
	}
	if strings.TrimSpace(string(data)) != "" {
		t.Errorf("the bundle ends in something else than certificates: %q", data)
	}
	return names
}

// debianTrustLayout is a Layout of Debian's shape in a temporary directory, its directories
// made, whose trust tool is a stand-in that appends a line to ran when it is run.
func debianTrustLayout(t *testing.T) (l Layout, ran string) {
	base := t.TempDir()
	ran = filepath.Join(base, "tool-ran")
	tool := filepath.Join(base, "update-ca-certificates")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho ran >> "+ran+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l = Layout{ConfigDir: filepath.Join(base, "conf"), TrustDir: filepath.Join(base, "trust"), TrustBundle: filepath.Join(base, "certs", "ca-certificates.crt"),
		UpdateTrust: true, TrustTool: []string{tool}}
	for _, d := range []string{l.ConfigDir, l.TrustDir, filepath.Dir(l.TrustBundle)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return l, ran
}

// TestTrustBundleWithoutTheTool: on Debian's layout the session CAs go to the end of the
// system's bundle and leave it without the distribution's tool (a stand-in that says when it is
// run): added, replaced, removed, after a rebuild by the tool that put them among the others,
// and after a sync that stopped between the bundle and its record; a bundle that is a link is
// left to the tool.
func TestTrustBundleWithoutTheTool(t *testing.T) {
	l, ran := debianTrustLayout(t)
	d1, d2 := testCAPEM(t, "distro-1"), testCAPEM(t, "distro-2")
	distro := append(append([]byte{}, d1...), d2...)
	if err := os.WriteFile(l.TrustBundle, distro, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	install := func(user string, pem []byte) {
		t.Helper()
		old, _ := os.ReadFile(l.caFile(user))
		if err := os.WriteFile(l.caFile(user), pem, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := updateTrust(ctx, l, old); err != nil {
			t.Fatalf("installing the CA of %s: %v", user, err)
		}
	}
	drop := func(user string) {
		t.Helper()
		old, _ := os.ReadFile(l.caFile(user))
		if err := os.Remove(l.caFile(user)); err != nil {
			t.Fatal(err)
		}
		if err := updateTrust(ctx, l, old); err != nil {
			t.Fatalf("dropping the CA of %s: %v", user, err)
		}
	}
	want := func(step string, names ...string) {
		t.Helper()
		if got := bundleNames(t, l.TrustBundle); strings.Join(got, " ") != strings.Join(names, " ") {
			t.Errorf("%s: the bundle holds %v, want %v", step, got, names)
		}
		if st, err := os.Stat(l.TrustBundle); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: the bundle's mode: %v %v", step, st.Mode(), err)
		}
	}
	a, b, a2 := testCAPEM(t, "session-a"), testCAPEM(t, "session-b"), testCAPEM(t, "session-a2")
	install("lmcp-a", a)
	want("A added", "distro-1", "distro-2", "session-a")
	install("lmcp-b", b)
	want("B added", "distro-1", "distro-2", "session-a", "session-b")
	install("lmcp-a", a2)
	want("A's CA replaced", "distro-1", "distro-2", "session-a2", "session-b")

	// The tool rebuilt the bundle (an upgrade of ca-certificates): the session CAs among the
	// others, each file as it is plus a newline.
	rebuilt := bytes.Join([][]byte{d1, a2, d2, b}, nil)
	if err := os.WriteFile(l.TrustBundle, rebuilt, 0o644); err != nil {
		t.Fatal(err)
	}
	drop("lmcp-b")
	want("B dropped after a rebuild", "distro-1", "distro-2", "session-a2")

	// A sync that wrote the bundle but not its record: the next one still takes out what is
	// the sessions'.
	if err := os.WriteFile(l.bundleRecord(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	install("lmcp-b", b)
	want("B again, after a stale record", "distro-1", "distro-2", "session-a2", "session-b")
	drop("lmcp-a")
	drop("lmcp-b")
	want("all dropped", "distro-1", "distro-2")
	if got, _ := os.ReadFile(l.TrustBundle); !bytes.Equal(got, distro) {
		t.Errorf("the bundle with no session is not the distribution's as it was:\n%s", got)
	}
	// A CA the tool put in (a runner from before this one installed it) and no record of
	// ours names: dropped, it leaves the bundle.
	c := testCAPEM(t, "session-c")
	if err := os.WriteFile(l.caFile("lmcp-c"), c, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.TrustBundle, bytes.Join([][]byte{d1, c, d2}, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(l.bundleRecord()); err != nil {
		t.Fatal(err)
	}
	drop("lmcp-c")
	want("a CA the tool put in, dropped", "distro-1", "distro-2")
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the tool ran on a plain bundle")
	}

	// A bundle that is a link: the tool's work.
	real := filepath.Join(filepath.Dir(l.TrustBundle), "real.crt")
	if err := os.Rename(l.TrustBundle, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, l.TrustBundle); err != nil {
		t.Fatal(err)
	}
	install("lmcp-a", a)
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("a bundle that is a link was not left to the tool")
	}
	if got, _ := os.ReadFile(real); !bytes.Equal(got, distro) {
		t.Errorf("the link's target was written")
	}
}

// TestTrustBundleOddFiles: what syncBundle reads is capped and never followed through a link;
// a bundle over the cap is an error that names it (the bundle untouched, the tool not run); a
// session CA, a record or a bundle that is a link, or a bundle others may write, is left to the
// tool and nothing is read through the link.
func TestTrustBundleOddFiles(t *testing.T) {
	setup := func(t *testing.T) (Layout, string, []byte) {
		l, ran := debianTrustLayout(t)
		distro := testCAPEM(t, "distro-1")
		if err := os.WriteFile(l.TrustBundle, distro, 0o644); err != nil {
			t.Fatal(err)
		}
		return l, ran, distro
	}
	secret := []byte("lmcp-not-to-be-read-through-a-link\n")
	outside := filepath.Join(t.TempDir(), "outside.pem")
	if err := os.WriteFile(outside, append(testCAPEM(t, "outside"), secret...), 0o644); err != nil {
		t.Fatal(err)
	}
	toolRan := func(ran string) bool { _, err := os.Stat(ran); return err == nil }

	t.Run("bundle over the cap", func(t *testing.T) {
		l, ran, _ := setup(t)
		big := bytes.Repeat([]byte("#\n"), maxBundle/2+1)
		if err := os.WriteFile(l.TrustBundle, big, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(l.caFile("lmcp-a"), testCAPEM(t, "session-a"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := updateTrust(context.Background(), l, nil)
		if err == nil || !strings.Contains(err.Error(), l.TrustBundle) || !strings.Contains(err.Error(), "over") {
			t.Errorf("want an error naming the bundle and its size, got %v", err)
		}
		if got, _ := os.ReadFile(l.TrustBundle); !bytes.Equal(got, big) {
			t.Errorf("the bundle was written")
		}
		if toolRan(ran) {
			t.Errorf("the tool ran")
		}
	})
	for _, c := range []struct {
		name string
		odd  func(t *testing.T, l Layout)
	}{
		{"session CA that is a link", func(t *testing.T, l Layout) {
			if err := os.Symlink(outside, l.caFile("lmcp-b")); err != nil {
				t.Fatal(err)
			}
		}},
		{"record that is a link", func(t *testing.T, l Layout) {
			if err := os.Symlink(outside, l.bundleRecord()); err != nil {
				t.Fatal(err)
			}
		}},
		{"bundle that others may write", func(t *testing.T, l Layout) {
			if err := os.Chmod(l.TrustBundle, 0o666); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, ran, distro := setup(t)
			if err := os.WriteFile(l.caFile("lmcp-a"), testCAPEM(t, "session-a"), 0o644); err != nil {
				t.Fatal(err)
			}
			c.odd(t, l)
			if err := updateTrust(context.Background(), l, nil); err != nil {
				t.Fatalf("updateTrust: %v", err)
			}
			if !toolRan(ran) {
				t.Errorf("not left to the tool")
			}
			got, _ := os.ReadFile(l.TrustBundle)
			if !bytes.Equal(got, distro) || bytes.Contains(got, secret) {
				t.Errorf("the bundle was written:\n%s", got)
			}
		})
	}
}
