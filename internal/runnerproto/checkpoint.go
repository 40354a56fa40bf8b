package runnerproto

import "github.com/limactl-mcp/limactl-mcp/internal/tree"

// Checkpoints are snapshots of a staged copy that the runner takes and restores by itself, in
// the guest: content-addressed under the runner user's home,
// $HOME/.cache/limactl-mcp/checkpoints/SESSION/ (see internal/runner/checkpoint/store.go). The host
// sends the copy's root and its ignore rules; nothing of the content crosses the link.

// CkptTree says which tree a checkpoint covers: what the session's change detection scans
// (Root with Patterns, plus the Keep paths), less every .git.
type CkptTree struct {
	// Session names the session's store (BgNamePattern).
	Session  string         `json:"session"`
	Root     string         `json:"root"`
	Patterns []tree.Pattern `json:"patterns,omitempty"`
	Keep     []tree.Name    `json:"keep,omitempty"`
}

// CkptLimits bound a session's store; the runner refuses a request without them.
type CkptLimits struct {
	// MaxEntries bounds the entries of one checkpoint.
	MaxEntries int `json:"max_entries"`
	// MaxStoreBytes bounds the bytes of the stored objects of the session.
	MaxStoreBytes int64 `json:"max_store_bytes"`
	// MaxAuto is how many automatic checkpoints are kept (the oldest go first).
	MaxAuto int `json:"max_auto"`
	// MaxLabelled is how many checkpoints asked for (by the agent or a person) are kept.
	MaxLabelled int `json:"max_labelled"`
}

// CkptInfo describes one checkpoint.
type CkptInfo struct {
	ID    string `json:"id"`
	Label string `json:"label,omitempty"`
	// Auto says the checkpoint was taken automatically (before a review apply or a sync).
	Auto bool `json:"auto,omitempty"`
	// TimeMillis is when it was taken (Unix milliseconds, the guest's clock).
	TimeMillis int64 `json:"time_ms"`
	Files      int   `json:"files"`
	Dirs       int   `json:"dirs"`
	Symlinks   int   `json:"symlinks"`
	// Bytes is the size of its files; Stored what it added to the store (new content).
	Bytes  int64 `json:"bytes"`
	Stored int64 `json:"stored"`
}

// CkptCreateRequest takes a checkpoint of a tree.
type CkptCreateRequest struct {
	Tree   CkptTree   `json:"tree"`
	Label  string     `json:"label,omitempty"`
	Auto   bool       `json:"auto,omitempty"`
	Limits CkptLimits `json:"limits"`
}

// CkptCreateResult is the new checkpoint, or why there is none.
type CkptCreateResult struct {
	Checkpoint *CkptInfo `json:"checkpoint,omitempty"`
	// Pruned lists the checkpoints removed to keep within the limits.
	Pruned []string `json:"pruned,omitempty"`
	// StoreBytes is the store's size after the request.
	StoreBytes int64 `json:"store_bytes"`
	// Reused counts the files whose content was known from the previous checkpoint (not read).
	Reused int `json:"reused"`
	// StoreFull says the checkpoint was refused: its content would not fit in MaxStoreBytes
	// even after the automatic checkpoints were pruned. TooManyEntries: the tree has more than
	// MaxEntries entries.
	StoreFull      bool `json:"store_full,omitempty"`
	TooManyEntries bool `json:"too_many_entries,omitempty"`
	// RootMissing says the tree's root does not exist.
	RootMissing bool `json:"root_missing,omitempty"`
	// Skipped lists paths left out (sockets, fifos, devices; files that vanished meanwhile).
	Skipped []tree.Name `json:"skipped,omitempty"`
}

// CkptListRequest lists a session's checkpoints.
type CkptListRequest struct {
	Session string `json:"session"`
}

// CkptListResult lists them, oldest first.
type CkptListResult struct {
	Checkpoints []CkptInfo `json:"checkpoints"`
	StoreBytes  int64      `json:"store_bytes"`
}

// CkptRestoreRequest makes a tree exactly what checkpoint ID holds.
type CkptRestoreRequest struct {
	Tree CkptTree `json:"tree"`
	ID   string   `json:"id"`
	// DryRun lists what a restore would change, changing nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// MaxChanges bounds the changes listed (all are made; Total counts them).
	MaxChanges int `json:"max_changes"`
	// CopiedFrom, for a fork, is the tree Tree.Root was copied from (`cp -a`, which keeps
	// mtimes), with the same session paths: a file of the copy with the checkpoint's size and
	// mtime whose origin file is unchanged since the checkpoint read it (size, mtime, ctime,
	// inode) holds the checkpoint's content without being read. Seed names the session whose
	// store then learns the content of every file the restore knows (CkptSeed's seed). A runner
	// older than both ignores them: it reads every file, and its seed is none.
	CopiedFrom string `json:"copied_from,omitempty"`
	Seed       string `json:"seed,omitempty"`
}

// The kinds of change a restore makes.
const (
	CkptRemoved  = "removed" // an entry the checkpoint does not have
	CkptCreated  = "created" // an entry the checkpoint has and the tree did not
	CkptContent  = "content" // a file's content put back
	CkptMode     = "mode"    // permission bits put back
	CkptRelinked = "symlink" // a symlink's target put back
	CkptRetyped  = "type"    // an entry of another type replaced
)

// CkptChange is one change a restore made.
type CkptChange struct {
	Path tree.Name `json:"path"`
	Kind string    `json:"kind"`
}

// CkptRestoreResult says what a restore changed.
type CkptRestoreResult struct {
	// Unknown says there is no checkpoint ID (nothing was changed).
	Unknown bool `json:"unknown,omitempty"`
	// RootMissing says the tree's root does not exist.
	RootMissing bool         `json:"root_missing,omitempty"`
	Changes     []CkptChange `json:"changes"`
	// Total counts every change (Changes may hold fewer: MaxChanges).
	Total int `json:"total"`
	// Seeded counts the files of the seed written for the request's Seed session.
	Seeded int `json:"seeded,omitempty"`
}

// CkptSeedRequest, after a fork copied the tree Origin (the store of session OriginSession)
// to Tree.Root (`cp -a`), gives the new session's store (Tree.Session) what makes its first
// checkpoint cheap: a seed, the content hash of every file of the copy that is a copy of an
// origin file unchanged since the origin's newest checkpoint, with the copy's own identity.
// The store's first checkpoint reuses the seed's hash for a file whose identity is unchanged,
// as any checkpoint reuses its previous one's. A runner that does not know the request answers
// "unknown request": the first checkpoint then reads every file.
type CkptSeedRequest struct {
	Tree          CkptTree `json:"tree"`
	Origin        string   `json:"origin"`
	OriginSession string   `json:"origin_session"`
}

// CkptSeedResult says what the seed holds.
type CkptSeedResult struct {
	// Checkpoint is the origin's checkpoint the seed's hashes come from ("": none, no seed).
	Checkpoint string `json:"checkpoint,omitempty"`
	// Seeded counts the files of the seed; Files those of the copy.
	Seeded int `json:"seeded"`
	Files  int `json:"files"`
	// RootMissing says the copy's root does not exist.
	RootMissing bool `json:"root_missing,omitempty"`
}

// CkptManifestRequest asks for what a checkpoint holds.
type CkptManifestRequest struct {
	Session    string `json:"session"`
	ID         string `json:"id"`
	MaxEntries int    `json:"max_entries"`
}

// CkptManifestResult is a checkpoint's entries (with content hashes), sorted by path, and
// where its objects are (ObjectDir/HASH), for reading old content with a ReadRequest.
type CkptManifestResult struct {
	Unknown    bool         `json:"unknown,omitempty"`
	Checkpoint *CkptInfo    `json:"checkpoint,omitempty"`
	Entries    []tree.Entry `json:"entries"`
	ObjectDir  string       `json:"object_dir"`
}
