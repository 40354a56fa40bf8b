package checkpoint

import (
	"errors"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// List lists a session's checkpoints, oldest first.
func List(req *runnerproto.CkptListRequest, cache *Cache) (*runnerproto.CkptListResult, error) {
	s, err := openCkptStore(req.Session, false, cache)
	if errors.Is(err, errNoCkptStore) {
		return &runnerproto.CkptListResult{Checkpoints: []runnerproto.CkptInfo{}}, nil
	}
	if err != nil {
		return nil, err
	}
	l, err := s.readList()
	if err != nil {
		return nil, err
	}
	cs := l.Checkpoints
	if cs == nil {
		cs = []runnerproto.CkptInfo{}
	}
	return &runnerproto.CkptListResult{Checkpoints: cs, StoreBytes: l.StoreBytes}, nil
}

// Manifest returns what a checkpoint holds, for a review against it on the host.
func Manifest(req *runnerproto.CkptManifestRequest, cache *Cache) (*runnerproto.CkptManifestResult, error) {
	s, err := openCkptStore(req.Session, false, cache)
	if errors.Is(err, errNoCkptStore) {
		return &runnerproto.CkptManifestResult{Unknown: true, Entries: []tree.Entry{}}, nil
	}
	if err != nil {
		return nil, err
	}
	l, err := s.readList()
	if err != nil {
		return nil, err
	}
	res := &runnerproto.CkptManifestResult{Entries: []tree.Entry{}, ObjectDir: s.objectDir()}
	for i := range l.Checkpoints {
		if l.Checkpoints[i].ID == req.ID {
			res.Checkpoint = &l.Checkpoints[i]
		}
	}
	if res.Checkpoint == nil {
		res.Unknown = true
		return res, nil
	}
	m, err := s.readManifest(req.ID, req.MaxEntries)
	if err != nil {
		return nil, err
	}
	for _, e := range m.Entries {
		res.Entries = append(res.Entries, e.Entry)
	}
	return res, nil
}
