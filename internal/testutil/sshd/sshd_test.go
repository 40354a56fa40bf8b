package sshd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

func dial(t *testing.T, s *Server) *ssh.Client {
	t.Helper()
	c, err := ssh.Dial("tcp", s.Addr, &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(s.ClientSigner)},
		HostKeyCallback: ssh.FixedHostKey(s.HostKey),
		Timeout:         5 * time.Second,
	})
	if err != nil {
		t.Fatalf("dial %s: %v", s.Addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestServer(t *testing.T) {
	s := Start(t)
	if os.Geteuid() == 0 && s.User != TestUser {
		t.Fatalf("as root the login user should be %s, got %s", TestUser, s.User)
	}

	// The key file is usable by a client on its own.
	pemBytes, err := os.ReadFile(s.ClientKeyPath)
	if err != nil {
		t.Fatalf("reading client key: %v", err)
	}
	fileSigner, err := ssh.ParsePrivateKey(pemBytes)
	if err != nil {
		t.Fatalf("parsing client key: %v", err)
	}
	if !bytes.Equal(fileSigner.PublicKey().Marshal(), s.ClientSigner.PublicKey().Marshal()) {
		t.Fatal("ClientKeyPath and ClientSigner differ")
	}

	c := dial(t, s)

	sess, err := c.NewSession()
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	out, err := sess.CombinedOutput("id -un")
	sess.Close()
	if err != nil {
		t.Fatalf("id -un: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != s.User {
		t.Fatalf("id -un = %q, want %q", got, s.User)
	}

	sc, err := sftp.NewClient(c)
	if err != nil {
		t.Fatalf("sftp: %v", err)
	}
	defer sc.Close()

	name := path.Join(s.Home, fmt.Sprintf("sshd-test-%d-%d.txt", os.Getpid(), time.Now().UnixNano()))
	want := []byte("hello from sftp\n")
	f, err := sc.Create(name)
	if err != nil {
		t.Fatalf("sftp create %s: %v", name, err)
	}
	t.Cleanup(func() { os.Remove(name) })
	if _, err := f.Write(want); err != nil {
		t.Fatalf("sftp write: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("sftp close: %v", err)
	}
	f, err = sc.Open(name)
	if err != nil {
		t.Fatalf("sftp open: %v", err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatalf("sftp read: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("sftp read back %q, want %q", got, want)
	}

	// The file belongs to the login user and is visible to Run.
	if owner := strings.TrimSpace(s.Run(t, "stat", "-c", "%U", name)); owner != s.User {
		t.Fatalf("file owner = %q, want %q", owner, s.User)
	}
	if content := s.Run(t, "cat", name); content != string(want) {
		t.Fatalf("Run cat = %q, want %q", content, want)
	}
	if who := strings.TrimSpace(s.Run(t, "id", "-un")); who != s.User {
		t.Fatalf("Run id -un = %q, want %q", who, s.User)
	}
	if home := strings.TrimSpace(s.Run(t, "sh", "-c", `echo "$HOME"; pwd`)); home != s.Home+"\n"+s.Home {
		t.Fatalf("Run HOME/pwd = %q, want %q twice", home, s.Home)
	}

	if os.Geteuid() == 0 {
		// Permissions are enforced: the unprivileged user cannot read root-only files.
		if _, err := sc.Stat("/root/.profile-does-not-matter"); err == nil {
			t.Fatal("stat in /root succeeded for unprivileged user")
		}
		if _, err := sc.Open("/etc/shadow"); err == nil {
			t.Fatal("opening /etc/shadow succeeded for unprivileged user")
		}
	}

	s2 := Start(t)
	if s2.Port == s.Port || s2.Addr == s.Addr {
		t.Fatalf("second server got the same port %d", s.Port)
	}
	if bytes.Equal(s2.HostKey.Marshal(), s.HostKey.Marshal()) {
		t.Fatal("second server has the same host key")
	}
	c2 := dial(t, s2)
	sess2, err := c2.NewSession()
	if err != nil {
		t.Fatalf("new session on second server: %v", err)
	}
	defer sess2.Close()
	if out, err := sess2.CombinedOutput("echo ok"); err != nil || string(out) != "ok\n" {
		t.Fatalf("second server: %q, %v", out, err)
	}
}

// TestParallel starts several servers at once.
func TestParallel(t *testing.T) {
	for i := 0; i < 4; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			s := Start(t)
			c := dial(t, s)
			sess, err := c.NewSession()
			if err != nil {
				t.Fatalf("new session: %v", err)
			}
			defer sess.Close()
			if out, err := sess.CombinedOutput("true"); err != nil {
				t.Fatalf("true: %v: %s", err, out)
			}
		})
	}
}
