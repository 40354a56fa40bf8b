package runnerproto

// Background processes: a command started by one request that runs on after it, under a
// supervisor of its own in the guest (the runner binary in `bg-supervise` mode, in a session
// of its own), which writes the command's output and how it ended into the process's
// directory. Any runner of the same guest user can then list, read and signal it by id: a
// process outlives the runner and the SSH connection that started it (serve's handoff from the
// ControlMaster to a connection of its own, a reconnect after a drop).
//
// The directories are $HOME/.cache/limactl-mcp/bg/GROUP/ID, GROUP being the session's key and
// the owning serve's ("SESSION/OWNER"), each element matching BgNamePattern.

// BgNamePattern is what each element of a group must match.
const BgNamePattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`

// BgOutput is how a background process's output (stdout and stderr, interleaved as written)
// is kept on disk: in segments of SegmentBytes, of which the first HeadSegments and the last
// TailSegments are kept; the ones between are removed as the output grows. Offsets count every
// byte the process ever wrote, kept or not.
type BgOutput struct {
	SegmentBytes int `json:"segment_bytes"`
	HeadSegments int `json:"head_segments"`
	TailSegments int `json:"tail_segments"`
}

// BgStartRequest starts a background process.
type BgStartRequest struct {
	// Group is "SESSION/OWNER" (see above).
	Group string `json:"group"`
	// Argv and Dir are as in ExecRequest.
	Argv   []string `json:"argv"`
	Dir    string   `json:"dir"`
	Output BgOutput `json:"output"`
	// MaxRunning is how many of the group's processes may run at once; MaxKept is how many
	// records (running or not) the group keeps: the oldest that ended are removed to make room.
	MaxRunning int `json:"max_running"`
	MaxKept    int `json:"max_kept"`
}

// BgStartResult says how a start went. ID and PID are set when the process runs.
type BgStartResult struct {
	ID  int `json:"id,omitempty"`
	PID int `json:"pid,omitempty"`
	// TooMany says the group already runs MaxRunning processes; nothing was started.
	TooMany bool `json:"too_many,omitempty"`
	// StartError says why the command could not start (as ExecResult's), with ExitCode 127
	// for a program that is not there, 126 otherwise; DirMissing as in ExecResult.
	StartError string `json:"start_error,omitempty"`
	ExitCode   int    `json:"exit_code,omitempty"`
	DirMissing bool   `json:"dir_missing,omitempty"`
}

// BgStatus is what is known of one background process.
type BgStatus struct {
	ID      int      `json:"id"`
	Argv    []string `json:"argv"`
	Dir     string   `json:"dir"`
	PID     int      `json:"pid"`
	Started int64    `json:"started_ms"` // Unix milliseconds
	// Running says the command has not exited yet.
	Running bool `json:"running"`
	// ExitCode and Signal say how it ended (ExitCode -1 when a signal killed it); Ended is
	// when (Unix milliseconds).
	ExitCode int    `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	Ended    int64  `json:"ended_ms,omitempty"`
	// Lost says the supervisor is gone without recording an end (it was killed): the command's
	// state is unknown and its output no longer collected.
	Lost bool `json:"lost,omitempty"`
	// OutputBytes is how many bytes of output the process wrote so far.
	OutputBytes int64 `json:"output_bytes"`
	// Ports are the TCP sockets the process's group listens on now (at most MaxBgPorts),
	// as far as the runner can see them (its own user's processes).
	Ports []BgPort `json:"ports,omitempty"`
}

// MaxBgPorts bounds the listening sockets reported for one background process.
const MaxBgPorts = 32

// BgPort is one listening TCP socket of a background process's group.
type BgPort struct {
	// Port is the guest port (1-65535).
	Port int `json:"port"`
	// Addr is the address it is bound to, as text ("0.0.0.0", "::", "127.0.0.1").
	Addr string `json:"addr"`
}

// BgReadRequest reads a background process's output from Offset, at most Max bytes.
type BgReadRequest struct {
	Group  string   `json:"group"`
	ID     int      `json:"id"`
	Offset int64    `json:"offset"`
	Max    int      `json:"max"`
	Output BgOutput `json:"output"`
}

// BgReadResult is output from Offset (or, when the bytes there were dropped, from the first
// kept byte after it: Skipped counts the bytes in between), and the process's status.
type BgReadResult struct {
	Unknown bool   `json:"unknown,omitempty"` // no process with that id
	Data    []byte `json:"data"`
	Offset  int64  `json:"offset"` // where Data starts
	Skipped int64  `json:"skipped,omitempty"`
	// Next is the offset to read from next (Offset + len(Data)).
	Next   int64    `json:"next"`
	Status BgStatus `json:"status"`
}

// BgListRequest lists the processes of a group, at most Max.
type BgListRequest struct {
	Group  string   `json:"group"`
	Max    int      `json:"max"`
	Output BgOutput `json:"output"`
}

// BgListResult lists them by id.
type BgListResult struct {
	Processes []BgStatus `json:"processes"`
	Truncated bool       `json:"truncated,omitempty"`
}

// BgSignalRequest signals a background process's process group with Signal ("SIGTERM"),
// and, when it has not ended GraceMillis later, with SIGKILL.
type BgSignalRequest struct {
	Group       string   `json:"group"`
	ID          int      `json:"id"`
	Signal      string   `json:"signal"`
	GraceMillis int64    `json:"grace_ms"`
	Output      BgOutput `json:"output"`
}

// BgSignalResult says what happened.
type BgSignalResult struct {
	Unknown bool `json:"unknown,omitempty"`
	// AlreadyEnded says the process had ended before the signal: nothing was sent.
	AlreadyEnded bool `json:"already_ended,omitempty"`
	// Killed says SIGKILL followed because the process outlived the grace period.
	Killed bool     `json:"killed,omitempty"`
	Status BgStatus `json:"status"`
}

// BgEndRequest kills (SIGKILL) every process under a group prefix — one owner
// ("SESSION/OWNER") or every owner of a session ("SESSION") — and removes their records.
// KeepOwners, for a session, spares the owners named (the servers still running).
type BgEndRequest struct {
	Group      string   `json:"group"`
	KeepOwners []string `json:"keep_owners,omitempty"`
	// ListOnly, for a session, only lists its owners: nothing is killed or removed.
	ListOnly bool `json:"list_only,omitempty"`
}

// BgEndResult counts what was ended.
type BgEndResult struct {
	Killed  int      `json:"killed"`
	Removed int      `json:"removed"`
	Owners  []string `json:"owners,omitempty"` // for a session: the owners found (at most 256)
}
