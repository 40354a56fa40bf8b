package cmdutil

import (
	"context"
	"io"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/workdirpath"
)

// Selector is what a command line names of a staged session: the instance, --workdir and
// --session, as given, and how to open the instance. Resolve checks it, once, for every
// command (gh's pr/shared/finder.go is the model: one finder per noun).
type Selector struct {
	IO *iostreams.IOStreams
	// Verb is the command ("review", "sync", ...): the errors suggest `limactl mcp VERB ...`.
	Verb     string
	Instance string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// Session is --session ("" or "default": the unnamed session).
	Session string
	// Open opens the instance (nil: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
}

// Ref is a resolved Selector: the working directory absolute and symlink-free, the session
// name checked.
type Ref struct {
	Verb     string
	Instance string
	// Workdir is the working directory the command was run for ("" for ResolveInstance).
	Workdir string
	// Session is the session's name, "" for the unnamed one.
	Session string

	open sessionopen.Opener
	// errOut is where notes for a person go (IO.ErrOut).
	errOut io.Writer
}

// Resolve checks the working directory (workdirpath.Resolve), then the session name
// (staging.ParseSessionName), before anything is opened: a typo is said first.
func Resolve(s Selector) (*Ref, error) {
	workdir, err := workdirpath.Resolve(s.Workdir)
	if err != nil {
		return nil, err
	}
	r, err := ResolveInstance(s)
	if err != nil {
		return nil, err
	}
	r.Workdir = workdir
	return r, nil
}

// ResolveInstance is Resolve for a command about the whole instance (status): the session
// name is checked, the working directory is not looked at.
func ResolveInstance(s Selector) (*Ref, error) {
	session, err := staging.ParseSessionName(s.Session)
	if err != nil {
		return nil, err
	}
	errOut := io.Discard
	if s.IO != nil {
		errOut = s.IO.ErrOut
	}
	open := s.Open
	if open == nil {
		open = sessionopen.HostOpener(errOut)
	}
	return &Ref{Verb: s.Verb, Instance: s.Instance, Session: session, open: open, errOut: errOut}, nil
}

// OpenInstance opens the instance; the error of a misspelled one names the command meant on
// the instance it is close to (sessionopen.WithCommand). The caller closes the Target.
func (r *Ref) OpenInstance(ctx context.Context) (*sessionopen.Target, error) {
	t, err := r.open(ctx, r.Instance)
	if err != nil {
		return nil, sessionopen.WithCommand(err, r.Verb)
	}
	return t, nil
}

// OpenSession opens the instance and the session the command is about: the working
// directory's own, or that of the staged project holding it (sessionopen.OpenSession). The
// caller closes the Target.
func (r *Ref) OpenSession(ctx context.Context) (*sessionopen.Target, *staging.Session, error) {
	return sessionopen.OpenSession(ctx, r.open, r.Verb, r.Instance, r.Workdir, r.Session)
}

// OpenState opens the instance and reads the stored state of the session the command is about
// (the working directory's own, or that of the staged project holding it: Target.Find),
// without opening the session: nil when it is not staged. It gives the working directory the
// session is of. The caller closes the Target, also when the state is nil.
func (r *Ref) OpenState(ctx context.Context) (*sessionopen.Target, string, *staging.State, error) {
	t, err := r.OpenInstance(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	workdir, err := t.Find(r.Verb, r.Workdir, r.Session)
	if err != nil {
		t.Close()
		return nil, "", nil, err
	}
	st, err := t.Lookup(workdir, r.Session)
	if err != nil {
		t.Close()
		return nil, "", nil, err
	}
	return t, workdir, st, nil
}

// Flag is --session as the commands we suggest spell it ("" for the unnamed session).
func (r *Ref) Flag() string {
	return staging.SessionFlag(r.Session)
}

// Inside says the session found is that of a staged project holding the working directory,
// not the directory's own: the command says which it works on (Which).
func (r *Ref) Inside(s *staging.Session) bool {
	return s.State.Workdir != r.Workdir
}

// Which names the working directory the command is about, for a person (sessionopen.Which).
func (r *Ref) Which(s *staging.Session) string {
	return sessionopen.Which(s, r.Workdir)
}
