package staging

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// ForkConns is what a fork of a session under a network policy needs besides the session's own
// connection (its agent's): the Lima user's connection, which sets the new session's agent user
// up and joins the copy's two ends, and a connection for that agent (sessionopen.Target's
// AgentConn). A fork of an open session needs neither.
type ForkConns struct {
	Lima  *guest.Conn
	Agent func(*guest.Agent) *guest.Conn
}

// forkUnderPolicy is Fork of a session under a network policy. The origin's copy belongs to
// its agent user, whose agent may have shaped it in any way; the fork's belongs to an agent
// user of its own, under the same policy, as for any new session under it (in that user's home:
// AgentHome). That user is set up first (`net ensure`: the user, its rules, its copy's
// directory, empty), then the copy goes from one agent user to the other in one pipe
// (guest.Conn.CopyBetweenAgents: read as the origin's agent, written as the new one, neither
// root nor the Lima user touching the files). Nothing is shared with the origin's checkpoint
// store, which its agent user alone can read: the fork's first checkpoint stores its own.
//
// At a checkpoint, the origin's store goes the same way into the new session's, the new runner
// restores the checkpoint into the copy (checking every object's content against its hash, as
// any restore does: the store is an agent's), and the store keeps only the objects, as a fork of
// an open session shares them: the fork starts with no checkpoint of its own.
//
// On a failure, nothing half made stays: the new agent user's policy ends and its copy, its
// store and its state go, as a discard does.
func (s *Session) forkUnderPolicy(ctx context.Context, name, id, checkpoint string, conns ForkConns, start time.Time) (*ForkResult, error) {
	guestPath, _ := SessionGuestPath(s.State.Workdir, name, AgentHome(id), id)
	st := s.forkState(id, name, guestPath, checkpoint)
	base := &Manifest{Entries: append(s.Baseline.Entries[:0:0], s.Baseline.Entries...)}
	agent := AgentFor(id, NetworkOf(st), guestPath)
	agent.Live = s.store.LivePolicy(id)
	fork := &Session{conn: conns.Agent(agent), store: s.store, State: st, Baseline: base}
	res := &ForkResult{Session: fork}

	ok := false
	defer func() {
		if ok {
			return
		}
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		// As a discard: the store goes as the agent user, whose processes, rules and policy
		// then end; the copy is the Lima user's again and goes with its marker.
		_ = fork.removeCheckpoints(cleanup)
		if ReleaseAgent(cleanup, conns.Lima, st) == nil {
			_ = Attach(conns.Lima, s.store, st, base).removeGuestCopy(cleanup)
		}
		_ = s.store.Remove(id)
	}()
	if _, err := fork.conn.Setup(ctx); err != nil {
		return nil, fmt.Errorf("setting up the agent user of session %s: %w", SessionLabel(name), err)
	}
	from, to := AgentUser(s.State.ID), AgentUser(id)
	err := conns.Lima.Within(ctx, forkCopyWait, "copying the session's guest copy", func(ctx context.Context) error {
		if err := conns.Lima.CopyBetweenAgents(ctx, from, s.State.GuestPath, to, guestPath); err != nil {
			return err
		}
		if checkpoint == "" {
			return nil
		}
		return conns.Lima.CopyBetweenAgents(ctx, from, path.Join(AgentHome(s.State.ID), checkpointStoreRel, s.State.ID), to, path.Join(AgentHome(id), checkpointStoreRel, id))
	})
	if err != nil {
		return nil, err
	}
	if checkpoint != "" {
		r, err := fork.conn.CkptRestore(ctx, runnerproto.CkptRestoreRequest{Tree: fork.checkpointTree(), ID: checkpoint, MaxChanges: maxRestoreChanges})
		if err := s.forkRestoreError(ctx, checkpoint, guestPath, r, err); err != nil {
			return nil, err
		}
		res.Restored = r.Total
		// The origin's checkpoints are not the fork's: its store keeps their objects only.
		store := shellquote.Quote(path.Join(AgentHome(id), checkpointStoreRel, id))
		if _, err := fork.conn.Stream(ctx, "cd "+store+" && rm -rf manifests list.json && mkdir -m 700 manifests", nil); err != nil {
			return nil, fmt.Errorf("leaving the origin's checkpoints out of the fork's store: %w", err)
		}
	}
	if err := fork.finishFork(ctx); err != nil {
		return nil, err
	}
	ok = true
	res.Duration = time.Since(start)
	return res, nil
}
