package secrets

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// A request that the method and path rules refuse is held, instead of refused at once, while a
// person watches the session (`limactl mcp watch`, whose reads keep a "watched" marker in the
// session's host state directory fresh: MarkWatched): the relay writes it into that
// directory's HeldDir, which the watch lists (HeldRequests), and waits, bounded, for the
// decision the watch writes beside it (DecideHeld: once, deny), for the watch to stop, for
// its time to pass, for the relay's connection to end. The guest's proxy does the same for the
// connections it refuses (enforce/hold.go); this is its twin on the host, where the relay
// reads the requests: nothing of it is in the guest, whose agent only waits for its answer.
// The ids are the relay's own, random; the method and path shown are the agent's (the watch
// shows them escaped and allows only the rule for exactly them, netpolicy.ExactRule).

const (
	// HeldDir is the directory of the held requests in the session's host state directory.
	HeldDir = "relay-held"
	// DefaultHoldFor bounds how long a held request waits for the person (the guest's proxy
	// holds a connection as long).
	DefaultHoldFor = 60 * time.Second
	// MaxHeld is how many requests one relay holds at once; more are refused at once.
	MaxHeld = 8
	// HeldIDPrefix starts a held request's id, which the guest's ids (16 hex digits) never do:
	// `network INSTANCE once ID` tells the two apart by it.
	HeldIDPrefix = "relay-"

	watchedName    = "watched"
	heldSuffix     = ".held.json"
	decisionSuffix = ".decision"
	// watchedFresh is how old the marker may be for a watch to count as running.
	watchedFresh = netpolicy.WatchedFresh
	// holdPoll is how often a held request looks for its decision.
	holdPoll = 200 * time.Millisecond
	// maxHeldFile bounds what is read of one held request's file or decision.
	maxHeldFile = 8 << 10
)

// HeldRequest is a request the relay holds while the person decides.
type HeldRequest struct {
	ID string
	// Host is the target, host:port.
	Host string
	// Method and Path are the request's, the path as sent (escaped), capped: the agent's.
	Method, Path string
	// Command is the command behind its connection, as the guest's proxy found it ("":
	// none; Relay.ServeRuled): the agent's text.
	Command         string `json:",omitempty"`
	Since, Deadline time.Time
}

// CheckHeldID tells whether id is a held request's id as the relay makes them.
func CheckHeldID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, HeldIDPrefix)
	if !ok || len(hexPart) != 16 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil && strings.ToLower(hexPart) == hexPart
}

// MarkWatched says that a person watches the session whose host state directory is dir: while
// this is fresh (netpolicy.WatchedFresh), its relay holds the requests the rules refuse. The
// watch calls it at each read; watcher names it (netpolicy.NewHeldID: its own marker, which
// Unwatch takes away when it stops; those of watches gone without it are removed here once
// stale), "" is the one marker of a watch that names none.
func MarkWatched(dir, watcher string) error {
	name := watchedName
	if watcher != "" {
		if !netpolicy.CheckHeldID(watcher) {
			return fmt.Errorf("secrets: watcher %q: not 16 hex digits", watcher)
		}
		name += "." + watcher
	}
	root, err := openHeldDir(dir, true)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, stale := range watcherNames(root) {
		if !freshMarker(root, stale) {
			_ = root.Remove(stale)
		}
	}
	return root.WriteFile(name, []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o600)
}

// Unwatch takes the marker of the watch watcher away (when it stops): without another fresh
// one, the session's relay refuses the requests its rules refuse at once again, and those it
// holds now as soon as they look (holdPoll).
func Unwatch(dir, watcher string) error {
	if !netpolicy.CheckHeldID(watcher) {
		return fmt.Errorf("secrets: watcher %q: not 16 hex digits", watcher)
	}
	root, err := openHeldDir(dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Remove(watchedName + "." + watcher); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("secrets: %w", err)
	}
	return nil
}

// openHeldDir opens dir's HeldDir (create: making it, 0700, when missing).
func openHeldDir(dir string, create bool) (*os.Root, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	defer root.Close()
	if create {
		if err := root.Mkdir(HeldDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("secrets: %w", err)
		}
	}
	return root.OpenRoot(HeldDir)
}

// watched tells whether a watch keeps a marker in root fresh.
func watched(root *os.Root) bool {
	if freshMarker(root, watchedName) {
		return true
	}
	return slices.ContainsFunc(watcherNames(root), func(name string) bool { return freshMarker(root, name) })
}

// watcherNames are the markers of the named watches in root.
func watcherNames(root *os.Root) []string {
	names, _ := readDirNames(root)
	var out []string
	for _, name := range names {
		if id, ok := strings.CutPrefix(name, watchedName+"."); ok && netpolicy.CheckHeldID(id) {
			out = append(out, name)
		}
	}
	return out
}

// freshMarker tells whether the marker name in root is a regular file (not a link) written in
// the last watchedFresh.
func freshMarker(root *os.Root, name string) bool {
	st, err := root.Lstat(name)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	age := time.Since(st.ModTime())
	return age < watchedFresh && age > -watchedFresh
}

// HeldRequests are the requests the relays of the session whose host state directory is dir
// hold now, oldest first (those whose time is up are left out: a relay that stopped leaves
// its file behind).
func HeldRequests(dir string) ([]HeldRequest, error) {
	root, err := openHeldDir(dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	names, err := readDirNames(root)
	if err != nil {
		return nil, err
	}
	var out []HeldRequest
	now := time.Now()
	for _, name := range names {
		id, ok := strings.CutSuffix(name, heldSuffix)
		if !ok || !CheckHeldID(id) {
			continue
		}
		data, err := readSmall(root, name)
		if err != nil {
			continue // decided and gone meanwhile
		}
		var h HeldRequest
		if json.Unmarshal(data, &h) != nil || h.ID != id || !h.Deadline.After(now) {
			continue
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b HeldRequest) int { return a.Since.Compare(b.Since) })
	return out, nil
}

// maxHeldNames bounds the names read of HeldDir.
const maxHeldNames = 4 * MaxHeld * 16

func readDirNames(root *os.Root) ([]string, error) {
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(maxHeldNames)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return names, nil
}

// readSmall reads the regular file name of root, up to maxHeldFile.
func readSmall(root *os.Root, name string) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	return io.ReadAll(io.LimitReader(f, maxHeldFile))
}

// DecideHeld hands the person's decision (netpolicy.DecisionOnce, DecisionDeny) on the
// request id that a relay of the session whose host state directory is dir holds: the watch's
// o and d, and `network INSTANCE once|refuse ID`.
func DecideHeld(dir, id, decision string) error {
	if !CheckHeldID(id) {
		return fmt.Errorf("%q is not the id of a request the relay holds (%s and 16 hex digits)", id, HeldIDPrefix)
	}
	if decision != netpolicy.DecisionOnce && decision != netpolicy.DecisionDeny {
		return fmt.Errorf("decision %q: once or deny", decision)
	}
	root, err := openHeldDir(dir, false)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err == nil {
		defer root.Close()
		if _, err = readSmall(root, id+heldSuffix); err == nil {
			tmp := id + decisionSuffix + ".tmp"
			if err := root.WriteFile(tmp, []byte(decision+"\n"), 0o600); err != nil {
				return err
			}
			return root.Rename(tmp, id+decisionSuffix)
		}
	}
	return fmt.Errorf("request %s is not held (any more): its time was up, the watch stopped, or the agent's command gave up", id)
}

// holdOutcome is how a hold ended.
type holdOutcome int

const (
	notHeld     holdOutcome = iota // no watch, too many held, no directory: refused at once
	allowedOnce                    // the person let this request through
	deniedByPerson
	timedOut  // nobody decided in time
	watchGone // the watch stopped
	holdEnded // the relay's connection or its server ended
)

// refusal says to the agent how a held request ended, when it was refused.
func (o holdOutcome) refusal(holdFor time.Duration) string {
	switch o {
	case deniedByPerson:
		return "the person watching the session was asked and refused it"
	case timedOut:
		return fmt.Sprintf("the person watching the session was asked and did not allow it in %s", holdFor)
	case watchGone:
		return "the person's watch stopped before they allowed it"
	}
	return ""
}

// holding is the requests a relay holds now (at most MaxHeld), by id.
type holding struct {
	mu  sync.Mutex
	now map[string]HeldRequest
}

// add keeps h, unless MaxHeld are held already.
func (hs *holding) add(h HeldRequest) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.now) >= MaxHeld {
		return false
	}
	if hs.now == nil {
		hs.now = map[string]HeldRequest{}
	}
	hs.now[h.ID] = h
	return true
}

func (hs *holding) remove(id string) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	delete(hs.now, id)
}

// Held are the requests this relay holds now, oldest first: what its server tells the agent
// while a command waits on one (netpolicy.HeldConn, with the request's method and path).
func (r *Relay) Held() []netpolicy.HeldConn {
	r.holding.mu.Lock()
	defer r.holding.mu.Unlock()
	out := make([]netpolicy.HeldConn, 0, len(r.holding.now))
	for _, h := range r.holding.now {
		host, port, _ := net.SplitHostPort(h.Host)
		n, _ := strconv.Atoi(port)
		out = append(out, netpolicy.HeldConn{ID: h.ID, Host: host, Port: n, Since: h.Since, Request: h.Method + " " + h.Path,
			SecondsLeft: max(0, int(time.Until(h.Deadline)/time.Second))})
	}
	slices.SortFunc(out, func(a, b netpolicy.HeldConn) int { return a.Since.Compare(b.Since) })
	return out
}

func (r *Relay) holdFor() time.Duration {
	if r.HoldFor > 0 {
		return r.HoldFor
	}
	return DefaultHoldFor
}

// hold holds the request (target, method, the escaped path) while a person watches the
// session (r.HoldDir), until they decide, bounded by holdFor and by ctx.
func (r *Relay) hold(ctx context.Context, target, method, path, command string) holdOutcome {
	if r.HoldDir == "" {
		return notHeld
	}
	root, err := openHeldDir(r.HoldDir, false)
	if err != nil {
		return notHeld // no watch ever ran
	}
	defer root.Close()
	if !watched(root) {
		return notHeld
	}
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	now := time.Now()
	h := HeldRequest{ID: HeldIDPrefix + hex.EncodeToString(raw[:]), Host: target, Method: capPath(method), Path: capPath(path),
		Command: command, Since: now.UTC(), Deadline: now.Add(r.holdFor()).UTC()}
	if !r.holding.add(h) {
		return notHeld
	}
	defer r.holding.remove(h.ID)
	data, err := json.Marshal(h)
	if err != nil || root.WriteFile(h.ID+heldSuffix, data, 0o600) != nil {
		return notHeld
	}
	defer root.Remove(h.ID + heldSuffix)
	defer root.Remove(h.ID + decisionSuffix)
	ctx, cancel := context.WithDeadline(ctx, h.Deadline)
	defer cancel()
	tick := time.NewTicker(holdPoll)
	defer tick.Stop()
	for {
		if d, err := readSmall(root, h.ID+decisionSuffix); err == nil {
			switch string(bytes.TrimSpace(d)) {
			case netpolicy.DecisionOnce:
				return allowedOnce
			case netpolicy.DecisionDeny:
				return deniedByPerson
			}
		}
		if !watched(root) {
			return watchGone
		}
		select {
		case <-ctx.Done():
			if time.Now().Before(h.Deadline) {
				return holdEnded
			}
			return timedOut
		case <-tick.C:
		}
	}
}
