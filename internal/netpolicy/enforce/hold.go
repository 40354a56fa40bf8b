package enforce

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/atomicfile"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// A connection the policy refuses is held, instead of refused at once, while a person watches
// its agent user (`limactl mcp watch`, whose reads of the record, `net report --watch`, keep a
// root-owned "watched" marker fresh): the proxy lists it in a root-owned pending file, which
// `net report` shows, and waits, bounded, for a decision `net decide` writes (once, deny), for
// a policy that allows it now (the watch's a), for the watch to stop, for the client to hang
// up. Under policy none nothing is held (the agent has no proxy there). All these files are
// root's, in a directory of root's that only root may enter (heldDir); the ids are the
// proxy's.

const (
	// defaultHoldFor bounds how long a held connection waits for the person.
	defaultHoldFor = 60 * time.Second
	// watchedFresh is how old the watched marker may be for a watch to count as running.
	watchedFresh = netpolicy.WatchedFresh
	// holdPoll is how often a held connection looks for its decision.
	holdPoll = 200 * time.Millisecond
	// maxHeldHost is the longest host name held (DNS's bound).
	maxHeldHost = 253
	// maxPendingFile bounds what is read of a pending file (MaxHeldPerUser entries).
	maxPendingFile = 64 << 10
)

func (l Layout) heldDir() string                { return filepath.Join(l.ConfigDir, "held") }
func (l Layout) watchedFile(user string) string { return filepath.Join(l.heldDir(), user+".watched") }

// watcherFile is the marker of one watch of user (its id: netpolicy.NewHeldID's).
func (l Layout) watcherFile(user, watcher string) string {
	return filepath.Join(l.heldDir(), user+".watched."+watcher)
}
func (l Layout) pendingFile(user string) string {
	return filepath.Join(l.heldDir(), user+".pending.json")
}
func (l Layout) decisionFile(user, id string) string {
	return filepath.Join(l.heldDir(), user+"."+id+".decision")
}

// ensureHeldDir makes heldDir root's and 0700 (the agent may not even list it).
func ensureHeldDir(l Layout) error {
	if err := ensureRootDir(l.ConfigDir); err != nil {
		return err
	}
	return ensureRootDirMode(l.heldDir(), 0o700)
}

// pendingConn is a held connection as the pending file has it.
type pendingConn struct {
	ID       string    `json:"id"`
	Host     string    `json:"host"`
	Port     int       `json:"port"`
	Since    time.Time `json:"since"`
	Deadline time.Time `json:"deadline"`
	// Command is the command that made it (peercmd.go: the agent's text).
	Command string `json:"command,omitempty"`
}

// MarkWatched says that a person watches user now: while this is fresh (watchedFresh), the
// proxy holds the connections of user that it would refuse. watcher names the watch (its own
// marker, which Unwatch takes away when it stops; the markers of watches gone without it are
// removed here once stale); "" is the one marker of a watch that names none.
func MarkWatched(l Layout, user, watcher string) error {
	if os.Geteuid() != 0 {
		return errors.New("net report --watch must run as root")
	}
	if err := CheckUserName(user); err != nil {
		return err
	}
	name := l.watchedFile(user)
	if watcher != "" {
		if !netpolicy.CheckHeldID(watcher) {
			return fmt.Errorf("watcher %q: not 16 hex digits", watcher)
		}
		name = l.watcherFile(user, watcher)
	}
	if err := ensureHeldDir(l); err != nil {
		return err
	}
	for _, stale := range watcherFiles(l, user) {
		if !freshMarker(stale) {
			_ = os.Remove(stale)
		}
	}
	return atomicfile.WriteFile(name, []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o600, true)
}

// Unwatch takes the marker of the watch watcher of user away (`net unwatch`, when the watch
// stops): without another fresh one, the proxy refuses user's connections at once again, and
// those it holds now as soon as it looks (holdPoll).
func Unwatch(l Layout, user, watcher string) error {
	if os.Geteuid() != 0 {
		return errors.New("net unwatch must run as root")
	}
	if err := CheckUserName(user); err != nil {
		return err
	}
	if !netpolicy.CheckHeldID(watcher) {
		return fmt.Errorf("watcher %q: not 16 hex digits", watcher)
	}
	if err := os.Remove(l.watcherFile(user, watcher)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// watched tells whether a person watches user now: one of its markers is fresh.
func watched(l Layout, user string) bool {
	if freshMarker(l.watchedFile(user)) {
		return true
	}
	return slices.ContainsFunc(watcherFiles(l, user), freshMarker)
}

// watcherFiles are the paths of the markers of user's named watches in heldDir (root's, 0700).
func watcherFiles(l Layout, user string) []string {
	entries, err := os.ReadDir(l.heldDir())
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if id, ok := strings.CutPrefix(e.Name(), user+".watched."); ok && netpolicy.CheckHeldID(id) {
			out = append(out, filepath.Join(l.heldDir(), e.Name()))
		}
	}
	return out
}

// freshMarker tells whether the marker at path is a regular file of root's (not followed when
// a link), written in the last watchedFresh.
func freshMarker(path string) bool {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Geteuid() {
		return false
	}
	age := time.Since(st.ModTime())
	return age < watchedFresh && age > -watchedFresh
}

// readPending reads user's pending file (none: nothing held).
func readPending(l Layout, user string) ([]pendingConn, error) {
	data, err := readRootFile(l.pendingFile(user), maxPendingFile)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return nil, err
	}
	var held []pendingConn
	if err := json.Unmarshal(data, &held); err != nil {
		return nil, fmt.Errorf("%s: %w", l.pendingFile(user), err)
	}
	return held, nil
}

// heldConns is what `net report` shows of the pending file: the connections still held (a
// proxy that stopped leaves its file behind: their deadlines have passed).
func heldConns(l Layout, user string) ([]netpolicy.HeldConn, error) {
	pending, err := readPending(l, user)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []netpolicy.HeldConn
	for _, h := range pending {
		left := h.Deadline.Sub(now)
		if left <= 0 || len(out) == netpolicy.MaxHeldPerUser || !netpolicy.CheckHeldID(h.ID) || h.Host == "" || len(h.Host) > maxHeldHost || h.Port < 1 || h.Port > 65535 {
			continue
		}
		out = append(out, netpolicy.HeldConn{ID: h.ID, Host: h.Host, Port: h.Port, Since: h.Since, Command: h.Command,
			SecondsLeft: min(3600, int(math.Ceil(left.Seconds())))})
	}
	return out, nil
}

// Decide hands the person's decision (netpolicy.DecisionOnce or DecisionDeny) to the held
// connection id of user, which the proxy acts on within holdPoll.
func Decide(l Layout, user, id, decision string) error {
	if os.Geteuid() != 0 {
		return errors.New("net decide must run as root (the held connections are root's alone)")
	}
	if err := CheckUserName(user); err != nil {
		return err
	}
	if !netpolicy.CheckHeldID(id) {
		return fmt.Errorf("%q is not a held connection's id (16 hex digits)", id)
	}
	if decision != netpolicy.DecisionOnce && decision != netpolicy.DecisionDeny {
		return fmt.Errorf("decision %q: once or deny", decision)
	}
	held, err := heldConns(l, user)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(held, func(h netpolicy.HeldConn) bool { return h.ID == id }) {
		return fmt.Errorf("no connection %s of %s is held now: it was decided, it timed out, or its client hung up", id, user)
	}
	if err := atomicfile.WriteFile(l.decisionFile(user, id), []byte(decision+"\n"), 0o600, true); err != nil {
		return err
	}
	// The connection may have ended meanwhile (its proxy removes the decision file then): a
	// decision nobody reads is not left behind.
	if held, err := heldConns(l, user); err == nil && !slices.ContainsFunc(held, func(h netpolicy.HeldConn) bool { return h.ID == id }) {
		_ = os.Remove(l.decisionFile(user, id))
		return fmt.Errorf("connection %s of %s ended before the decision reached it", id, user)
	}
	return nil
}

// holdOutcome is how a held connection ended.
type holdOutcome int

const (
	notHeld         holdOutcome = iota // no watch, policy none, or too many held: refused at once
	allowedOnce                        // the person allowed this connection
	allowedByPolicy                    // the policy allows it now (the person allowed it for the session)
	deniedByPerson
	holdTimedOut
	watchEnded // the watch stopped, or the user's policy went away
	clientHungUp
)

// clearHeld removes what a proxy that stopped left in heldDir (its held connections are gone
// with it; the watches write their markers again within a second).
func clearHeld(l Layout) {
	if err := os.RemoveAll(l.heldDir()); err != nil {
		fmt.Fprintf(os.Stderr, "limactl-mcp netproxy: clearing %s: %v\n", l.heldDir(), err)
	}
}

// heldBook is the proxy's held connections, by user.
type heldBook struct {
	byUser map[string][]pendingConn
}

// holdFor is how long the proxy holds a connection (tests shorten it).
func (p *Proxy) holdDuration() time.Duration {
	if p.holdFor > 0 {
		return p.holdFor
	}
	return defaultHoldFor
}

// addHeld registers a held connection of user; false when user has MaxHeldPerUser already or
// the pending file cannot be written.
func (p *Proxy) addHeld(user string, h pendingConn) bool {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	if p.held.byUser == nil {
		p.held.byUser = map[string][]pendingConn{}
	}
	cur := p.held.byUser[user]
	if len(cur) >= netpolicy.MaxHeldPerUser {
		return false
	}
	next := append(slices.Clone(cur), h)
	if err := p.writePending(user, next); err != nil {
		fmt.Fprintf(os.Stderr, "limactl-mcp netproxy: holding a connection of %s: %v (refused at once)\n", user, err)
		return false
	}
	p.held.byUser[user] = next
	return true
}

func (p *Proxy) removeHeld(user, id string) {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	next := slices.DeleteFunc(slices.Clone(p.held.byUser[user]), func(h pendingConn) bool { return h.ID == id })
	if len(next) == 0 {
		delete(p.held.byUser, user)
	} else {
		p.held.byUser[user] = next
	}
	if err := p.writePending(user, next); err != nil {
		fmt.Fprintf(os.Stderr, "limactl-mcp netproxy: writing the held connections of %s: %v\n", user, err)
	}
	_ = os.Remove(p.layout.decisionFile(user, id))
}

func (p *Proxy) writePending(user string, held []pendingConn) error {
	if err := ensureHeldDir(p.layout); err != nil {
		return err
	}
	if held == nil {
		held = []pendingConn{}
	}
	data, _ := json.Marshal(held)
	return atomicfile.WriteFile(p.layout.pendingFile(user), append(data, '\n'), 0o600, true)
}

// readDecision is the decision written for a held connection, or "".
func (p *Proxy) readDecision(user, id string) string {
	data, err := readRootFile(p.layout.decisionFile(user, id), 64)
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(data))
}

// hold holds the connection c of user to host:port, which policy refuses, while a person
// watches user, and says how it ended. It never blocks another connection: each waits in its
// own goroutine, bounded by holdDuration, and c's client hanging up ends its wait.
func (p *Proxy) hold(c net.Conn, br *bufio.Reader, user UserPolicy, policy netpolicy.Policy, host string, port int) holdOutcome {
	// A name longer than DNS allows is no destination to ask about (and the record would not
	// check out on the host with it).
	if policy.Mode() == netpolicy.ModeNone || len(host) > maxHeldHost || !watched(p.layout, user.User) {
		return notHeld
	}
	now := time.Now()
	h := pendingConn{ID: netpolicy.NewHeldID(), Host: host, Port: port, Since: now.UTC(), Deadline: now.Add(p.holdDuration()).UTC(), Command: p.command(c)}
	if !p.addHeld(user.User, h) {
		return notHeld
	}
	defer p.removeHeld(user.User, h.ID)
	// The client's hanging up ends the wait: a peek sees it (what the client sends meanwhile
	// stays buffered for later).
	peeked := make(chan error, 1)
	go func() {
		_, err := br.Peek(1)
		peeked <- err
	}()
	defer func() {
		if peeked != nil {
			_ = c.SetReadDeadline(time.Now()) // wakes the peek; its timeout is forgotten by br
			<-peeked
		}
		_ = c.SetReadDeadline(time.Time{})
	}()
	tick := time.NewTicker(holdPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-peeked:
			peeked = nil
			if err != nil {
				return clientHungUp
			}
			continue // the client sent something: it is still there
		case <-tick.C:
		}
		switch p.readDecision(user.User, h.ID) {
		case netpolicy.DecisionOnce:
			return allowedOnce
		case netpolicy.DecisionDeny:
			return deniedByPerson
		}
		_, cur, ok := p.policies.lookup(user.UID)
		switch {
		case !ok:
			return watchEnded
		case cur.AllowsPort(host, port):
			return allowedByPolicy
		case !watched(p.layout, user.User):
			return watchEnded
		case !time.Now().Before(h.Deadline):
			return holdTimedOut
		}
	}
}

// heldRefusal is the reason logged and the answer the agent reads when a held connection is
// refused after all.
func heldRefusal(out holdOutcome, policy netpolicy.Policy, host string, port int, holdFor time.Duration) (reason, msg string) {
	target := net.JoinHostPort(host, fmt.Sprint(port))
	var what string
	switch out {
	case deniedByPerson:
		reason, what = "denied by the person", "and refused it"
	case holdTimedOut:
		reason, what = "held: the person did not decide", fmt.Sprintf("and did not allow it in %d s", int(holdFor.Round(time.Second)/time.Second))
	default:
		reason, what = "held: the watch ended", "and the watch ended before they allowed it"
	}
	return reason, fmt.Sprintf("limactl-mcp network policy %s: %s is not allowed; the person watching this agent was asked %s (ask them to allow it: limactl mcp network INSTANCE allow %s)\n",
		policy, target, what, target)
}
