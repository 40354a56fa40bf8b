package review

// Action is what to do with an item.
type Action string

// Actions.
const (
	// Accept writes the guest's version (or the selected hunks) to the host.
	Accept Action = "accept"
	// Reject leaves the host alone; the change stays pending in the guest.
	Reject Action = "reject"
	// RejectRevert leaves the host alone and puts the baseline back in the guest.
	RejectRevert Action = "reject-revert"
	// KeepHost (a conflict) keeps the host's version and copies it into the guest.
	KeepHost Action = "keep-host"
	// TakeGuest (a conflict) writes the guest's version to the host.
	TakeGuest Action = "take-guest"
	// Skip (a conflict) does nothing; it stays pending.
	Skip Action = "skip"
)

// Decision is what the person chose for one item.
type Decision struct {
	Path   string
	Action Action
	// Hunks, for Accept of a text item, says which hunks are accepted (nil: all). Rejected
	// hunks stay pending in the guest.
	Hunks []bool
	// Lines, for Accept of a text item, chooses within hunks (lines.go): nil, or one entry
	// per hunk, nil for a hunk taken or left whole (Hunks), else one per line of the hunk:
	// an added line chosen is written, a removed line chosen is removed, the others stay
	// pending in the guest (context lines: ignored).
	Lines [][]bool `json:",omitempty"`
}
