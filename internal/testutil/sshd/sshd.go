// Package sshd starts a real OpenSSH sshd on loopback for integration tests.
//
// Each call to Start runs its own sshd (own temp dir, own host and client
// keys, own port), so several servers in one test binary and test binaries
// of different packages running at the same time do not conflict.
//
// When the test process runs as root, clients log in as the dedicated
// unprivileged user "mcptest" (created on first use), so that file
// permissions are enforced as for a normal user. Otherwise they log in as the
// current user, with sshd running unprivileged.
//
// Note that all servers of one host share the login user's home directory:
// tests that may run in parallel should use distinct file names in Home.
package sshd

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

const (
	sshdPath       = "/usr/sbin/sshd"
	sftpServerPath = "/usr/lib/openssh/sftp-server"
	privsepDir     = "/run/sshd"

	// TestUser is the login user when the test process runs as root.
	TestUser = "mcptest"

	readyTimeout = 10 * time.Second
	bindAttempts = 8
)

// Server is a running sshd.
type Server struct {
	Addr          string // "127.0.0.1:PORT"
	Port          int
	User          string        // the login user
	Home          string        // that user's home directory
	ClientKeyPath string        // private key file (OpenSSH PEM, ed25519) the client authenticates with
	ClientSigner  ssh.Signer    // same key as a signer
	HostKey       ssh.PublicKey // the server's host key

	asRoot bool // the test process is root; Run goes through runuser

	stop func() // stops this server and its sessions
}

// Start starts sshd for the duration of the test; t.Cleanup stops it and
// removes its files. If the test has failed by then, the tail of the sshd log
// is printed.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Config{})
}

// Config changes how StartWith's sshd is set up.
type Config struct {
	// MaxSessions is sshd's MaxSessions, the sessions one connection may have open (default
	// 64; Lima's guests have OpenSSH's default, 10).
	MaxSessions int
}

// StartWith is Start with cfg.
func StartWith(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = 64
	}

	if _, err := os.Stat(sshdPath); err != nil {
		t.Fatalf("sshd: %s not found (%v); install OpenSSH server: apt-get install openssh-server openssh-sftp-server", sshdPath, err)
	}

	asRoot := os.Geteuid() == 0
	var u *user.User
	if asRoot {
		var err error
		if u, err = ensureTestUser(); err != nil {
			t.Fatalf("sshd: %v", err)
		}
		if err := ensurePrivsepDir(); err != nil {
			t.Fatalf("sshd: %v", err)
		}
	} else {
		var err error
		if u, err = user.Current(); err != nil {
			t.Fatalf("sshd: current user: %v", err)
		}
	}

	dir, err := makeTempDir(asRoot)
	if err != nil {
		t.Fatalf("sshd: %v", err)
	}
	logPath := filepath.Join(dir, "sshd.log")

	srv := &Server{
		User:   u.Username,
		Home:   u.HomeDir,
		asRoot: asRoot,
	}

	var proc *process
	t.Cleanup(func() {
		if proc != nil {
			proc.stop()
		}
		if t.Failed() {
			if tail := logTail(logPath, 60); tail != "" {
				t.Logf("sshd log (%s) tail:\n%s", srv.Addr, tail)
			}
		}
		os.RemoveAll(dir)
	})

	hostSigner, err := writeKeys(dir, srv)
	if err != nil {
		t.Fatalf("sshd: %v", err)
	}
	srv.HostKey = hostSigner.PublicKey()

	subsystem := sftpServerPath
	if _, err := os.Stat(sftpServerPath); err != nil {
		subsystem = "internal-sftp"
	}

	var lastErr error
	for attempt := 0; attempt < bindAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("sshd: picking a free port: %v", err)
		}
		srv.Port = port
		srv.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

		cfgPath := filepath.Join(dir, "sshd_config")
		if err := os.WriteFile(cfgPath, []byte(config(dir, port, srv.User, subsystem, cfg.MaxSessions)), 0o644); err != nil {
			t.Fatalf("sshd: %v", err)
		}
		proc, err = startProcess(cfgPath, logPath)
		if err != nil {
			t.Fatalf("sshd: %v", err)
		}
		err = srv.waitReady(proc)
		if err == nil {
			p := proc
			srv.stop = p.stop
			return srv
		}
		lastErr = err
		proc.stop()
		proc = nil
		if !errors.Is(err, errBindRace) {
			break
		}
	}
	t.Fatalf("sshd: server on %s did not become ready: %v\nsshd log tail:\n%s", srv.Addr, lastErr, logTail(logPath, 60))
	return nil
}

// Run runs a command as the login user directly on this host (not through
// ssh), in the user's home directory with HOME set, and returns its combined
// output. A failing command fails the test.
func (s *Server) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	var cmd *exec.Cmd
	if s.asRoot {
		cmd = exec.Command("runuser", append([]string{"-u", s.User, "--", name}, args...)...)
	} else {
		cmd = exec.Command(name, args...)
	}
	cmd.Dir = s.Home
	cmd.Env = append(os.Environ(), "HOME="+s.Home, "USER="+s.User, "LOGNAME="+s.User)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sshd: running %q as %s: %v\n%s", append([]string{name}, args...), s.User, err, out)
	}
	return string(out)
}

// Stop stops the server and every session it serves, as a guest that goes away does (the VM
// stopped); only this test's server is touched.
func (s *Server) Stop() { s.stop() }

// ClientConfig returns an ssh.ClientConfig that logs in as s.User with
// s.ClientSigner and accepts only s.HostKey.
func (s *Server) ClientConfig() *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(s.ClientSigner)},
		HostKeyCallback: ssh.FixedHostKey(s.HostKey),
		Timeout:         5 * time.Second,
	}
}

var errBindRace = errors.New("sshd could not bind its port (taken by someone else)")

// waitReady waits until a full SSH handshake and public key authentication
// succeed against the server.
func (s *Server) waitReady(p *process) error {
	deadline := time.Now().Add(readyTimeout)
	cfg := s.ClientConfig()
	cfg.Timeout = time.Second
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			log, _ := os.ReadFile(p.logPath)
			if bytes.Contains(log, []byte("Address already in use")) || bytes.Contains(log, []byte("Cannot bind any address")) {
				return errBindRace
			}
			return fmt.Errorf("sshd exited early: %v", p.waitErr)
		default:
		}
		c, err := ssh.Dial("tcp", s.Addr, cfg)
		if err == nil {
			c.Close()
			return nil
		}
		lastErr = err
		// Host key verification precedes authentication, so an auth
		// failure means our own sshd rejected the key: no point retrying.
		if strings.Contains(err.Error(), "unable to authenticate") {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no successful handshake within %v: %v", readyTimeout, lastErr)
}

type process struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

func startProcess(cfgPath, logPath string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own copy
	cmd := exec.Command(sshdPath, "-D", "-e", "-f", cfgPath)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", sshdPath, err)
	}
	p := &process{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stop terminates the listening sshd and the per-connection sshd processes it
// forked (those run in their own sessions, so signalling the process group is
// not enough).
func (p *process) stop() {
	pid := p.cmd.Process.Pid
	children := childPIDs(pid)
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGTERM)
	}
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// childPIDs returns the pids of the direct children of pid.
func childPIDs(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Format: pid (comm) state ppid ...; comm may contain spaces.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil && ppid == pid {
			out = append(out, n)
		}
	}
	return out
}

func config(dir string, port int, login, subsystem string, maxSessions int) string {
	lines := []string{
		"ListenAddress 127.0.0.1",
		"Port " + strconv.Itoa(port),
		"HostKey " + filepath.Join(dir, "ssh_host_ed25519_key"),
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"StrictModes no",
		"UsePAM no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password",
		"AllowUsers " + login,
		"Subsystem sftp " + subsystem,
		"MaxSessions " + strconv.Itoa(maxSessions),
		"MaxStartups 100",
		"PrintMotd no",
		"PrintLastLog no",
		"UseDNS no",
		"LogLevel VERBOSE",
	}
	return strings.Join(lines, "\n") + "\n"
}

// writeKeys generates the host key and client key, writes them and the
// authorized_keys file to dir, and fills in the client fields of srv.
func writeKeys(dir string, srv *Server) (ssh.Signer, error) {
	hostSigner, err := writeKey(filepath.Join(dir, "ssh_host_ed25519_key"), "sshd-test-host")
	if err != nil {
		return nil, err
	}
	srv.ClientKeyPath = filepath.Join(dir, "id_ed25519")
	if srv.ClientSigner, err = writeKey(srv.ClientKeyPath, "sshd-test-client"); err != nil {
		return nil, err
	}
	ak := ssh.MarshalAuthorizedKey(srv.ClientSigner.PublicKey())
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), ak, 0o644); err != nil {
		return nil, err
	}
	return hostSigner, nil
}

// writeKey writes a new ed25519 private key in OpenSSH format (mode 0600)
// and its public key (path + ".pub").
func writeKey(path, comment string) (ssh.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o644); err != nil {
		return nil, err
	}
	return signer, nil
}

// freePort returns a loopback port that was free a moment ago. Start retries
// with another one if sshd loses the race for it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// makeTempDir creates the server's directory. sshd reads authorized_keys
// with the login user's privileges, so as root the directory must be
// reachable by that user: make it 0755 below a world-traversable base.
func makeTempDir(asRoot bool) (string, error) {
	base := os.TempDir()
	if asRoot && !worldTraversable(base) {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "sshd-test-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

func worldTraversable(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	for {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

func ensurePrivsepDir() error {
	if err := os.MkdirAll(privsepDir, 0o755); err != nil {
		return fmt.Errorf("creating privilege separation dir: %w", err)
	}
	return os.Chmod(privsepDir, 0o755)
}

var userMu sync.Mutex

// userLockPath serializes ensureTestUser across test processes: useradd run
// concurrently is not safe (several runs "succeed", leaving a user whose uid
// differs from the owner of its home directory).
const userLockPath = "/run/lock/sshd-testutil-" + TestUser + ".lock"

// ensureTestUser creates the unprivileged login user if missing and makes
// sure its account is not locked (with UsePAM no, sshd refuses accounts whose
// shadow password starts with "!", which is useradd's default) and that it
// owns its home directory.
func ensureTestUser() (*user.User, error) {
	userMu.Lock()
	defer userMu.Unlock()

	if err := os.MkdirAll(filepath.Dir(userLockPath), 0o755); err != nil {
		return nil, err
	}
	lf, err := os.OpenFile(userLockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	defer lf.Close() // releases the flock
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("locking %s: %w", userLockPath, err)
	}

	var lastOut []byte
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		u, err := user.Lookup(TestUser)
		if err != nil {
			var unknown user.UnknownUserError
			if !errors.As(err, &unknown) {
				return nil, fmt.Errorf("looking up user %s: %w", TestUser, err)
			}
			lastOut, lastErr = exec.Command("useradd", "--create-home", "--shell", "/bin/bash", "--password", "*", TestUser).CombinedOutput()
			if lastErr != nil {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		locked, err := shadowLocked(TestUser)
		if err != nil {
			return nil, err
		}
		if !locked {
			if err := ensureHome(u); err != nil {
				return nil, err
			}
			return u, nil
		}
		lastOut, lastErr = exec.Command("usermod", "--password", "*", TestUser).CombinedOutput()
		if lastErr != nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil, fmt.Errorf("could not set up user %s: %v: %s", TestUser, lastErr, bytes.TrimSpace(lastOut))
}

// ensureHome creates the user's home directory if it is missing (the user
// may have been created without one) and gives it back to the user if it is
// owned by someone else (e.g. left over from an earlier user of that name).
func ensureHome(u *user.User) error {
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	fi, err := os.Stat(u.HomeDir)
	if err != nil {
		if err := os.MkdirAll(u.HomeDir, 0o755); err != nil {
			return fmt.Errorf("creating home of %s: %w", u.Username, err)
		}
		return os.Chown(u.HomeDir, uid, gid)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
		if out, err := exec.Command("chown", "-R", u.Uid+":"+u.Gid, u.HomeDir).CombinedOutput(); err != nil {
			return fmt.Errorf("chown %s: %v: %s", u.HomeDir, err, bytes.TrimSpace(out))
		}
	}
	return nil
}

func shadowLocked(name string) (bool, error) {
	data, err := os.ReadFile("/etc/shadow")
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) >= 2 && f[0] == name {
			return strings.HasPrefix(f[1], "!"), nil
		}
	}
	return false, nil
}

func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
