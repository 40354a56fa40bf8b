package agentconfig

import (
	"bytes"
	"os"
	"path/filepath"
)

// Status is how far an agent's config already says what configure would write.
type Status struct {
	Agent
	// Configured: the server entry is there, running the same command.
	Configured bool
	// BuiltinsOff: the agent's own file and shell tools are off as --disable-builtin-tools
	// turns them off; CanDisable says whether that flag changes anything for this agent in
	// this scope (some agents have no setting for it, or only in the user's config).
	BuiltinsOff, CanDisable bool
	// Files are the config files involved.
	Files []string
}

// StatusOf says whether the agent opts names is configured as Plan(opts) would configure it,
// with and without --disable-builtin-tools. It reads the files and writes nothing.
func StatusOf(opts Options) (Status, error) {
	opts.DisableBuiltinTools = false
	plain, err := Plan(opts)
	if err != nil {
		return Status{}, err
	}
	opts.DisableBuiltinTools = true
	off, err := Plan(opts)
	if err != nil {
		return Status{}, err
	}
	st := Status{Configured: unchanged(plain), BuiltinsOff: unchanged(off)}
	for _, a := range Agents() {
		if a.Name == opts.Agent {
			st.Agent = a
		}
	}
	for _, c := range off {
		st.Files = append(st.Files, c.Path)
	}
	st.CanDisable, err = canDisable(opts)
	return st, err
}

func unchanged(cs []Change) bool {
	for _, c := range cs {
		if c.Changed() {
			return false
		}
	}
	return true
}

// canDisable says whether --disable-builtin-tools writes anything more for opts' agent and
// scope: planned on an empty project and home, with and without it.
func canDisable(opts Options) (bool, error) {
	empty, err := os.MkdirTemp("", "limactl-mcp-agentconfig-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(empty)
	opts.Workdir, opts.HomeDir = empty, empty
	opts.DisableBuiltinTools = false
	plain, err := Plan(opts)
	if err != nil {
		return false, err
	}
	opts.DisableBuiltinTools = true
	off, err := Plan(opts)
	if err != nil {
		return false, err
	}
	written := func(cs []Change) map[string][]byte {
		m := map[string][]byte{}
		for _, c := range cs {
			rel, _ := filepath.Rel(empty, c.Path)
			m[rel] = c.After
		}
		return m
	}
	a, b := written(plain), written(off)
	if len(a) != len(b) {
		return true, nil
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || !bytes.Equal(v, w) {
			return true, nil
		}
	}
	return false, nil
}
