//go:build linux

package enforce

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"golang.org/x/sys/unix"
)

// floodEnv makes the test binary a flood helper (TestMain): it opens that many listening
// sockets on 127.0.0.2 and up, says "ready", and holds them until its stdin closes.
const floodEnv = "NETPOLICY_TEST_FLOOD"

func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv(floodEnv)); err == nil {
		base, _ := strconv.Atoi(os.Getenv(floodEnv + "_BASE"))
		if err := openListeners(n, base); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// openListeners opens n listening sockets on 127.0.0.(base+2+i/10000).1 and leaves them open.
func openListeners(n, base int) error {
	for i := 0; i < n; i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return fmt.Errorf("socket %d: %v", i, err)
		}
		addr := &unix.SockaddrInet4{Addr: [4]byte{127, 0, byte(base + 2 + i/10000), 1}}
		if err := unix.Bind(fd, addr); err != nil {
			return fmt.Errorf("bind %d: %v", i, err)
		}
		if err := unix.Listen(fd, 1); err != nil {
			return fmt.Errorf("listen %d: %v", i, err)
		}
	}
	return nil
}

// floodSockets adds n listening loopback sockets to the socket table (an agent's flood), in
// helper processes of 10,000 each (a process's descriptors are limited), until the test ends.
func floodSockets(t *testing.T, n int) {
	t.Helper()
	for i := 0; n > 0; i++ {
		k := min(n, 10000)
		n -= k
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), floodEnv+"="+strconv.Itoa(k), floodEnv+"_BASE="+strconv.Itoa(i))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		startReady(t, "flood helper", cmd, func() {
			stdin.Close()
			cmd.Wait()
		})
	}
}

// startReady starts cmd, which says "ready" on a line of its own once set up, and waits for
// that line; stop (registered as cmd starts) ends it when the test ends.
func startReady(t *testing.T, what string, cmd *exec.Cmd, stop func()) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("%s: %q", what, line)
	}
}

// medianLookup is the median time of peerUID on a live connection.
func medianLookup(t *testing.T, client, server netip.AddrPort) time.Duration {
	t.Helper()
	var times []time.Duration
	for i := 0; i < 200; i++ {
		t0 := time.Now()
		uid, _, err := peerUID(client, server)
		d := time.Since(t0)
		if err != nil || uid != os.Getuid() {
			t.Fatalf("peerUID: %d %v", uid, err)
		}
		times = append(times, d)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times[len(times)/2]
}

// TestPeerLookupUnderSocketFlood: finding the peer's uid does not grow with the socket table:
// the same lookup, before and after 30,000 more loopback sockets, compared.
func TestPeerLookupUnderSocketFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 30,000 sockets")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	client := netip.MustParseAddrPort(s.RemoteAddr().String())
	server := netip.MustParseAddrPort(s.LocalAddr().String())
	before := medianLookup(t, client, server)
	floodSockets(t, 30000)
	after := medianLookup(t, client, server)
	t.Logf("median peer lookup: %v with a quiet table, %v with 30,000 more sockets", before, after)
	// Generous for a loaded machine; the scan of /proc/net/tcp it replaces went from 15 ms to
	// 100 ms here (on a table other processes had filled already), and from well under a
	// millisecond to tens of them on a quiet one.
	if after > 3*before+time.Millisecond {
		t.Errorf("the peer lookup slowed down with the socket table: %v before, %v after", before, after)
	}
}

// TestFloodDoesNotDelayOtherSessions: while the socket table holds 30,000 more sockets (one
// agent's flood), another agent's request through the proxy is answered within a bound.
func TestFloodDoesNotDelayOtherSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 30,000 sockets")
	}
	f := startProxyFixture(t, "allow:localhost")
	floodSockets(t, 30000)
	url := fmt.Sprintf("http://localhost:%d/", f.upstream.Listener.Addr().(*net.TCPAddr).Port)
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		out, code := f.curlAs(t, url) // curl -m 10: the bound
		if code != 0 || !strings.Contains(out, "hello GET /") {
			t.Fatalf("a request during the flood: exit %d, %s", code, out)
		}
		t.Logf("request %d during the flood: %v", i, time.Since(t0))
	}
}

// TestRecordSurvivesLogFlood: a 50 MB upload to an allowed host, then 15,000 refused requests:
// the record still shows the upload (the raw log alone lost it when it rotated), the refused
// ones are all counted, and the raw log took only a rate-limited share of them.
func TestRecordSurvivesLogFlood(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	url := fmt.Sprintf("http://localhost:%d/upload", f.upstream.Listener.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command("runuser", "-u", f.agent, "--", "curl", "-sS", "-m", "60", "-x", "http://"+f.addr, "--data-binary", "@-", url)
	cmd.Stdin = bytes.NewReader(make([]byte, 50<<20))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "body=52428800") {
		t.Fatalf("upload: %v %s", err, out)
	}
	// 15,000 refused requests in one curl (URL globbing), each a connection of its own.
	out, _ := f.curlAs(t, "-o", "/dev/null", "-w", "%{http_code}\n", "http://denied[1-5000].test/", "http://127.0.0.1:9/[1-10000]")
	if n := strings.Count(out, "403"); n != 15000 {
		t.Fatalf("%d of 15,000 requests refused", n)
	}
	// Refused attempts alone are written to the record at most once a second.
	var rec netpolicy.Record
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		rec, err = Report(f.layout, "lmcp-test", 10)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Summary.Blocked >= 15000 || time.Now().After(deadline) {
			break
		}
	}
	s := rec.Summary
	if rec.Source != "totals" || len(s.HostsReached) != 1 || s.HostsReached[0].Host != "localhost" || s.HostsReached[0].BytesUp < 50<<20 {
		t.Fatalf("the upload is not in the record: %s %+v", rec.Source, s.HostsReached)
	}
	if s.Blocked != 15000 || s.Allowed != 1 || s.LastBlocked == nil || s.LastBlocked.Host != "127.0.0.1" {
		t.Errorf("counts: blocked %d, allowed %d, last %+v", s.Blocked, s.Allowed, s.LastBlocked)
	}
	if len(s.HostsBlocked) != netpolicy.MaxTotalsHosts || s.OthersBlocked == nil || s.OthersBlocked.Attempts+sumAttempts(s.HostsBlocked) != 15000 {
		t.Errorf("blocked hosts: %d listed, others %+v", len(s.HostsBlocked), s.OthersBlocked)
	}
	if s.Suppressed < 14000 {
		t.Errorf("only %d refused lines were left out of the raw log", s.Suppressed)
	}
	for _, p := range []string{f.layout.logFile("lmcp-test"), f.layout.totalsFile("lmcp-test")} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v (want 0600: no agent reads another's record)", p, st.Mode(), err)
		}
	}
	// The agent cannot read its record, nor its log.
	if out, err := exec.Command("runuser", "-u", f.agent, "--", "cat", f.layout.totalsFile("lmcp-test")).CombinedOutput(); err == nil {
		t.Errorf("the agent read the record: %s", out)
	}
}

func sumAttempts(hs []netpolicy.HostSummary) int {
	n := 0
	for _, h := range hs {
		n += h.Attempts
	}
	return n
}

// TestLogBookFloodKeepsTotals: the same at the log book, without sockets: a connection made,
// then 100,000 refused attempts to distinct hosts; the raw log rotates, the totals keep all.
func TestLogBookFloodKeepsTotals(t *testing.T) {
	dir := t.TempDir()
	b := newLogBook(dir)
	b.maxSize = 4096
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	b.now = func() time.Time { return now }
	if err := b.write("lmcp-x", netpolicy.Entry{Time: now, Host: "allowed.test", Port: 443, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy, BytesUp: 50 << 20, BytesDown: 10}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100000; i++ {
		now = now.Add(time.Millisecond)
		if err := b.write("lmcp-x", netpolicy.Entry{Time: now, Host: fmt.Sprintf("h%d.test", i), Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy}); err != nil {
			t.Fatal(err)
		}
	}
	b.close()
	tot, found, err := readTotals(Layout{LogDir: dir}.totalsFile("lmcp-x"))
	if err != nil || !found {
		t.Fatal(found, err)
	}
	s := tot.Summary()
	if len(s.HostsReached) != 1 || s.HostsReached[0].BytesUp != 50<<20 || s.Blocked != 100000 || s.Attempts != 100001 {
		t.Errorf("totals %+v", s)
	}
	if s.First == nil || !s.First.Equal(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)) || s.Last == nil || !s.Last.Equal(now) {
		t.Errorf("first %v last %v", s.First, s.Last)
	}
	// 100 s of refused attempts: the burst, then 5 a second.
	if s.Suppressed < 100000-userRefusedBurst-100*userRefusedRate-10 {
		t.Errorf("suppressed %d", s.Suppressed)
	}
	// A new log book (a restarted proxy) goes on from the record.
	b2 := newLogBook(dir)
	if err := b2.write("lmcp-x", netpolicy.Entry{Time: now, Host: "allowed.test", Port: 443, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy, BytesUp: 1}); err != nil {
		t.Fatal(err)
	}
	b2.close()
	tot, _, _ = readTotals(Layout{LogDir: dir}.totalsFile("lmcp-x"))
	if tot.Reached["allowed.test"].Attempts != 2 || tot.BytesUp != 50<<20+1 {
		t.Errorf("after a restart: %+v", tot.Reached["allowed.test"])
	}
}

func TestParseRecord(t *testing.T) {
	good := `{"user":"lmcp-a","source":"totals","summary":{"attempts":1,"allowed":1,"blocked":0,"bytes_up":5,"bytes_down":6,"hosts_reached":[{"host":"a.test","attempts":1,"bytes_up":5,"bytes_down":6}]}}`
	if r, err := netpolicy.ParseRecord([]byte(good), "lmcp-a"); err != nil || r.Summary.HostsReached[0].BytesUp != 5 {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{
		strings.Replace(good, "lmcp-a", "lmcp-b", 1),
		strings.Replace(good, `"totals"`, `"x"`, 1),
		strings.Replace(good, `"bytes_up":5,"bytes_down":6}`, `"bytes_up":-5,"bytes_down":6}`, 1),
		`{"user":"lmcp-a","source":"log","summary":{},"entries":[{"host":"","port":1}]}`,
		`not json`,
	} {
		if _, err := netpolicy.ParseRecord([]byte(bad), "lmcp-a"); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// TestReportWithoutTotals reads a record through Report, as `net report` does.
func TestReportWithoutTotals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := t.TempDir()
	l := Layout{LogDir: dir}
	line := `{"time":"2026-11-25T15:48:22Z","host":"a.test","port":443,"verdict":"allowed","via":"proxy","bytes_up":10,"bytes_down":20}` + "\n"
	if err := os.WriteFile(l.logFile("lmcp-a"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := Report(l, "lmcp-a", 5)
	if err != nil || rec.Source != "log" || rec.Summary.Allowed != 1 || len(rec.Entries) != 1 {
		t.Fatalf("%+v %v", rec, err)
	}
	if _, err := Report(l, "root", 5); err == nil {
		t.Error("a user that is no agent's")
	}
	if err := os.Symlink("/etc/shadow", l.totalsFile("lmcp-a")); err != nil {
		t.Fatal(err)
	}
	if _, err := Report(l, "lmcp-a", 5); err == nil {
		t.Error("a symbolic link was followed")
	}
}
