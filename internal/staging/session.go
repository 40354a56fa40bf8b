// Package staging keeps a staged copy of a working directory inside the guest: it pushes the
// tree in one archive, remembers on the host what it pushed (the baseline manifest), resumes
// after a restart, finds what changed on either side, and brings host edits over.
package staging

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/ignore"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

// Session is a staged working directory and the connection to its guest.
type Session struct {
	conn     *guest.Conn
	store    Store
	State    *State
	Baseline *Manifest
}

// OpenOptions say how to open a session.
type OpenOptions struct {
	Instance string
	Workdir  string
	// Session is the session's name ("" for the unnamed one; checked: ParseSessionName).
	Session string
	Select  SelectOptions
	// Fresh discards an existing session and stages anew.
	Fresh bool
	// GuestPath overrides where the copy goes in the guest (tests; default GuestPathFor).
	GuestPath string
	Progress  func(Progress)
	Logger    *slog.Logger
	// LockWait bounds the wait for another process staging the same directory.
	LockWait time.Duration
}

// Outcome says what Open did.
type Outcome string

// Outcomes of Open.
const (
	Staged   Outcome = "staged"   // a new session
	Resumed  Outcome = "resumed"  // the guest copy was there, with the agent's work in it
	Restaged Outcome = "restaged" // the guest copy was gone, or --fresh
)

// Open resumes the session of opts.Workdir, or stages it.
func Open(ctx context.Context, conn *guest.Conn, store Store, opts OpenOptions) (*Session, Outcome, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	workdir, err := filepath.Abs(opts.Workdir)
	if err != nil {
		return nil, "", err
	}
	if real, err := filepath.EvalSymlinks(workdir); err == nil {
		workdir = real
	}
	if err := checkWorkdir(workdir); err != nil {
		return nil, "", err
	}
	id := SessionIDOf(workdir, opts.Session)
	wait := opts.LockWait
	if wait == 0 {
		wait = 10 * time.Minute
	}
	unlock, err := store.Lock(id, wait)
	if err != nil {
		return nil, "", err
	}
	defer unlock()

	st, base, err := store.LoadID(id)
	switch {
	case err == nil && !opts.Fresh:
		s := &Session{conn: conn, store: store, State: st, Baseline: base}
		present, err := s.guestCopyPresent(ctx)
		if err != nil {
			return nil, "", err
		}
		if present {
			if err := s.closeRoom(ctx); err != nil {
				return nil, "", err
			}
			return s, Resumed, nil
		}
		log.Warn("the staged copy is gone from the guest (the instance was recreated, or its disk cleared); staging the working directory again",
			"workdir", workdir, "guest_path", st.GuestPath)
	case err == nil && opts.Fresh:
		s := &Session{conn: conn, store: store, State: st, Baseline: base}
		if cs, err := s.GuestChanges(ctx); err == nil && len(cs.Changes) > 0 {
			log.Warn(fmt.Sprintf("--fresh discards %s of the agent in the guest", words.Count(len(cs.Changes), "pending change")), "workdir", workdir)
		}
		if err := s.removeGuestCopy(ctx); err != nil {
			return nil, "", err
		}
	case !errors.Is(err, ErrNoSession):
		return nil, "", err
	}
	s, err := stage(ctx, conn, store, id, workdir, opts, log)
	if err != nil {
		return nil, "", err
	}
	if st != nil {
		return s, Restaged, nil
	}
	return s, Staged, nil
}

func stage(ctx context.Context, conn *guest.Conn, store Store, id, workdir string, opts OpenOptions, log *slog.Logger) (*Session, error) {
	home, err := conn.Home(ctx)
	if err != nil {
		return nil, err
	}
	guestPath := opts.GuestPath
	if guestPath == "" {
		var same bool
		guestPath, same = SessionGuestPath(workdir, opts.Session, home, id)
		if !same && opts.Session == "" {
			log.Info("the working directory's path cannot be used in the guest; staging it elsewhere (tools translate paths)", "guest_path", guestPath)
		}
	}
	sel, err := Select(ctx, workdir, opts.Select)
	if err != nil {
		return nil, fmt.Errorf("choosing what to stage: %w", err)
	}
	if n, size := (&Manifest{Entries: sel.Entries}).Files(); n > MaxStageFiles || size > MaxStageBytes {
		return nil, fmt.Errorf("%s holds %d files (%.1f GB) to stage, over the limit of %d files or %.0f GB: exclude large trees (build outputs, data, dependencies) with .gitignore, %s or --exclude, or run the server from a smaller directory",
			workdir, n, float64(size)/1e9, MaxStageFiles, float64(MaxStageBytes)/1e9, ignore.ProjectFile)
	}
	for _, sk := range sel.Skipped {
		log.Warn("not staged: not a regular file, directory or symlink", "path", sk)
	}
	if err := prepareGuestDir(ctx, conn, guestPath); err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	st := &State{
		ID: id, Instance: opts.Instance, Session: opts.Session, Workdir: workdir, GuestPath: guestPath, Token: hex.EncodeToString(tok),
		Excludes: opts.Select.Excludes, IncludeIgnored: opts.Select.IncludeIgnored, Patterns: sel.Patterns,
		Skipped: sel.Skipped, InGitRepo: sel.InGitRepo,
	}
	all := append(append([]tree.Entry(nil), sel.GitDir...), sel.Entries...)
	sent, err := push(ctx, conn, workdir, guestPath, all, opts.Progress)
	if err != nil {
		return nil, err
	}
	base := &Manifest{}
	for _, e := range sent {
		if first, _, _ := strings.Cut(string(e.Path), "/"); first != ".git" {
			base.Entries = append(base.Entries, e)
		}
	}
	base.Sort()
	s := &Session{conn: conn, store: store, State: st, Baseline: base}
	if err := s.writeMarker(ctx); err != nil {
		return nil, err
	}
	if err := s.closeRoom(ctx); err != nil {
		return nil, err
	}
	st.StagedAt = time.Now().UTC()
	st.UpdatedAt = st.StagedAt
	if err := store.Save(st, base); err != nil {
		return nil, err
	}
	return s, nil
}

// Limits of what one session stages.
const (
	MaxStageFiles = 200_000
	MaxStageBytes = 4 << 30
)

// Attach returns the session of an existing state without checking the guest.
func Attach(conn *guest.Conn, store Store, st *State, base *Manifest) *Session {
	return &Session{conn: conn, store: store, State: st, Baseline: base}
}

// Workspace maps host paths of the working directory to the guest copy.
func (s *Session) Workspace() *workspace.Workspace {
	return workspace.Staged(s.State.Workdir, s.State.GuestPath)
}

// Store is where the session's state is kept.
func (s *Session) Store() Store { return s.store }

// SaveBaseline records a new baseline (after a sync or an apply).
func (s *Session) SaveBaseline(m *Manifest) error {
	m.Sort()
	s.Baseline = m
	s.State.UpdatedAt = time.Now().UTC()
	// The network policy is the stored one: it may have changed live (limactl mcp network)
	// since this state was read, and a new baseline never means to change it.
	if cur, err := s.store.loadState(s.State.ID); err == nil {
		s.State.Network = cur.Network
	}
	return s.store.Save(s.State, m)
}

func errGuestCopyGone(st *State) error {
	return fmt.Errorf("the staged copy %s is gone from the guest (the instance was recreated or its disk cleared); restart `limactl mcp serve` to stage %s again", st.GuestPath, st.Workdir)
}
