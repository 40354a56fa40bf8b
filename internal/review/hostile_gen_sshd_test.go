package review_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/hostile"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// The generator of hostile trees: random guest states built from the attack vocabulary of the
// threat model (internal/testutil/hostile), reviewed with accept-all while the person edits
// some host files, and the host invariant checked afterwards by walking the host.
// `-hostile.count N -hostile.seed S` runs other states; a failure names its seed.
var (
	hostileCount = flag.Int("hostile.count", 100, "hostile guest states to generate")
	hostileSeed  = flag.Int64("hostile.seed", 1, "first seed")
)

func TestHostileTreesAcceptAll(t *testing.T) {
	hostileStates(t, "TestHostileTreesAcceptAll", hostile.Ops, acceptAllRandom)
}

// hostileStates runs the flags' seeds of generated guest states (ops) through Build and
// Apply with decide's decisions, against a real sshd; a failure names its seed. The seeds
// are shared among hostileWorkers, each on a connection of its own: a state is mostly waits
// on the guest's round trips, which two can overlap (the package's longest tests, 400 s of
// a loaded machine's 10-minute go test timeout when one at a time).
func hostileStates(t *testing.T, name string, ops func(*rand.Rand, string) []string, decide func(*rand.Rand, *review.Changeset) []review.Decision) {
	srv := sshd.Start(t)
	store := staging.Store{Dir: filepath.Join(t.TempDir(), "state")}
	var checks, nops atomic.Int64
	start := time.Now()
	t.Run("seeds", func(t *testing.T) {
		for w := range hostileWorkers {
			t.Run(fmt.Sprint(w), func(t *testing.T) {
				t.Parallel()
				conn := guesttest.Connect(t, srv, guest.Options{})
				for seed := *hostileSeed + int64(w); seed < *hostileSeed+int64(*hostileCount); seed += hostileWorkers {
					c, o := hostileState(t, srv, conn, store, seed, ops, decide)
					checks.Add(int64(c))
					nops.Add(int64(o))
					if t.Failed() {
						t.Fatalf("seed %d broke the host invariant (replay: go test ./internal/review -run %s -hostile.seed %d -hostile.count 1)", seed, name, seed)
					}
				}
			})
		}
	})
	t.Logf("%d hostile states (%d guest operations), %d host checks, in %s", *hostileCount, nops.Load(), checks.Load(), time.Since(start).Round(time.Second))
}

// hostileWorkers is how many states are made at once.
const hostileWorkers = 2

// The same on a host directory that does not tell case or Unicode normalization apart (the
// probe's answer forced): the guest makes names that are one name there (renames by case or
// normalization, two new names for one, a new name for a host file, directories among them),
// the person decides at random (a rename accepted or not, one name of a collision or none,
// keep-host or take-guest for a conflict), and on top of the host invariant: the host never
// ends with two names that are one under the rule where it had one (one applied over the
// other), and whatever was decided, no host edit is lost.
func TestHostileTreesFolding(t *testing.T) {
	old := review.ProbeNameRule
	review.ProbeNameRule = func(string) review.NameRule { return review.NameRule{FoldCase: true, Normalize: true} }
	t.Cleanup(func() { review.ProbeNameRule = old })
	hostileStates(t, "TestHostileTreesFolding", hostile.FoldOps, decideRandom)
}

func acceptAllRandom(_ *rand.Rand, cs *review.Changeset) []review.Decision { return acceptAll(cs) }

// decideRandom decides every item at random, as a person may: of a collision at most one name.
func decideRandom(r *rand.Rand, cs *review.Changeset) []review.Decision {
	var ds []review.Decision
	taken := map[string]bool{}
	for _, it := range cs.Items {
		if it.Refused != "" {
			continue
		}
		var a review.Action
		switch {
		case len(it.Collides) > 0:
			a = []review.Action{review.TakeGuest, review.Skip}[r.Intn(2)]
			for _, o := range it.Collides {
				if taken[o] {
					a = review.Skip
				}
			}
			taken[it.Path] = a == review.TakeGuest
		case it.Conflict && it.From != nil:
			a = []review.Action{review.TakeGuest, review.Skip}[r.Intn(2)]
		case it.Conflict:
			a = []review.Action{review.TakeGuest, review.Skip, review.KeepHost}[r.Intn(3)]
		case it.From != nil:
			a = []review.Action{review.Accept, review.Accept, review.Reject}[r.Intn(3)]
		default:
			a = []review.Action{review.Accept, review.Accept, review.Reject, review.RejectRevert}[r.Intn(4)]
		}
		ds = append(ds, review.Decision{Path: it.Path, Action: a})
	}
	return ds
}

// foldKey is a name as a host that folds case and normalization sees it: the checker's own,
// apart from review's on purpose.
func foldKey(p string) string { return strings.ToLower(norm.NFC.String(p)) }

// oneNamePerFold reports the host paths that are one name under the fold and were not both
// there before: one was applied over the other.
func oneNamePerFold(t *testing.T, c *hostile.Case, what string) int {
	t.Helper()
	after := hostile.Snap(t, c.Host)
	groups := map[string][]string{}
	for p := range after {
		groups[foldKey(p)] = append(groups[foldKey(p)], p)
	}
	n := 0
	for _, ps := range groups {
		n++
		if len(ps) < 2 {
			continue
		}
		before := 0
		for _, p := range ps {
			if _, ok := c.Before[p]; ok {
				before++
			}
		}
		if before < len(ps) {
			sort.Strings(ps)
			t.Errorf("%s: the host has %q, one name on a folding host", what, ps)
		}
	}
	return n
}

// hostileState makes one state, decides with decide, and checks the host; it returns the
// host checks and the guest operations it made.
func hostileState(t *testing.T, srv *sshd.Server, conn *guest.Conn, store staging.Store, seed int64, draw func(*rand.Rand, string) []string, decide func(*rand.Rand, *review.Changeset) []review.Decision) (int, int) {
	r := rand.New(rand.NewSource(seed))
	c := hostile.Setup(t, filepath.Join(t.TempDir(), fmt.Sprintf("s%d", seed)), r.Intn(2) == 0)
	gpath := fmt.Sprintf("%s/hostile-%d-%d/w", srv.Home, seed, time.Now().UnixNano())
	defer srv.Run(t, "rm", "-rf", filepath.Dir(gpath))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, _, err := staging.Open(ctx, conn, store, staging.OpenOptions{Workdir: c.Host, GuestPath: gpath})
	must(t, err)
	defer func() { _ = sess.Discard(context.Background()) }()
	ops := draw(r, c.Mark)
	what := fmt.Sprintf("seed %d (ops %q)", seed, ops)
	srv.Run(t, "bash", "-c", "cd "+gpath+" && { "+strings.Join(ops, "; ")+"; } 2>/dev/null; true")

	c.Snap(t)
	cs, err := review.Build(ctx, sess, nil)
	if err != nil {
		t.Errorf("%s: Build: %v", what, err)
		return 0, len(ops)
	}
	// The person edits some host files while the review is open: each must survive.
	for _, it := range cs.Items {
		if it.Host != nil && it.Host.Type == "file" && r.Intn(3) == 0 {
			p := it.Path
			if it.From != nil {
				p = it.From.Path // a rename: the host has the file under its old name
			}
			if fi, err := os.Lstat(filepath.Join(c.Host, filepath.FromSlash(p))); err != nil || !fi.Mode().IsRegular() {
				continue // the host spells it otherwise (a forced folding rule): the person edits files that are there
			}
			data := fmt.Sprintf("person's edit %d\n", r.Int())
			if os.WriteFile(filepath.Join(c.Host, filepath.FromSlash(p)), []byte(data), 0o644) == nil {
				c.Edits[p] = data
			}
		}
	}
	decisions := decide(r, cs)
	what = fmt.Sprintf("%s, decisions %v", what, decisions)
	rep, err := review.Apply(ctx, sess, cs, decisions)
	if err != nil {
		t.Errorf("%s: Apply: %v", what, err)
		return 0, len(ops)
	}
	what = fmt.Sprintf("%s, report %+v", what, rep)
	n := c.Check(t, what)
	if review.ProbeNameRule(c.Host).FoldCase {
		n += oneNamePerFold(t, c, what)
	}
	// Nothing silently lost: what was accepted and not written is still pending.
	cs2, err := review.Build(ctx, sess, nil)
	if err != nil {
		t.Errorf("%s: second Build: %v", what, err)
		return n, len(ops)
	}
	written := map[string]bool{}
	for _, w := range append(rep.Written, rep.Guest...) {
		written[w] = true // or settled in the guest (reverted, set to the host's version)
	}
	pending := map[string]bool{}
	for _, it := range append(cs2.Items, cs2.Ignored...) {
		pending[it.Path] = true
	}
	for _, it := range cs.Items {
		n++
		if !written[it.Display] && !pending[it.Path] && c.Edits[it.Path] == "" && !alreadyOnHost(c.Host, it) && !revertedBelow(rep, it.Path) {
			t.Errorf("%s: %q was neither written nor left pending (refused: %v)", what, it.Path, rep.Refused)
		}
	}
	return n, len(ops)
}

// revertedBelow says whether a path below p was reverted in the guest (which puts p back too).
func revertedBelow(rep *review.Report, p string) bool {
	for _, g := range rep.Guest {
		if strings.HasPrefix(g, p+"/") {
			return true
		}
	}
	return false
}

// alreadyOnHost says whether the host has the guest's side of an item without a write (a
// deletion of what is gone, a directory that is there).
func alreadyOnHost(host string, it *review.Item) bool {
	fi, err := os.Lstat(filepath.Join(host, filepath.FromSlash(it.Path)))
	if it.Guest == nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return err == nil && it.Guest.Type == "dir" && fi.IsDir()
}
