package netpolicy

// EnsureResult is `net ensure`'s one line of JSON: the contract with the host side.
type EnsureResult struct {
	User    string `json:"user"`
	UID     int    `json:"uid"`
	Home    string `json:"home"`
	Policy  string `json:"policy"`
	Proxy   string `json:"proxy"`
	EnvFile string `json:"env_file"`
	Log     string `json:"log"`
	// Runner is the root-owned runner the host verified and set the agent up with (host side
	// only, never read from the guest): the agent's processes start through its `net as`.
	Runner string `json:"-"`
}
