package staging

import (
	"path"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// systemDirs are guest directories a staged copy must not land in: the guest's own system,
// and /tmp, which a guest may clear at boot.
var systemDirs = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
	"/root", "/run", "/sbin", "/sys", "/tmp", "/usr", "/var", "/snap", "/opt/lima"}

// RelocatedDir is where a working directory whose path cannot be used in the guest is staged,
// relative to the guest user's home.
const RelocatedDir = "limactl-mcp-staged"

// GuestPathFor returns where workdir is staged in a guest whose user's home is guestHome: the
// same absolute path, so that paths in compiler errors and stack traces match the host's,
// unless that path collides with the guest's system directories or its home directory. Then
// it is ~/limactl-mcp-staged/NAME-ID, and tools translate paths both ways.
func GuestPathFor(workdir, guestHome, id string) (p string, same bool) {
	workdir = path.Clean(workdir)
	if !collides(workdir, path.Clean(guestHome)) {
		return workdir, true
	}
	return relocated(workdir, guestHome, id), false
}

// SessionGuestPath is where the session called name of workdir is staged ("" for the unnamed
// session: GuestPathFor). A named session cannot have the host's path, which is the unnamed
// session's (two copies at one path would need a mount namespace per session, which the
// guest user cannot make without root, and which a person's `limactl shell` would not be in):
// it is relocated, to ~/limactl-mcp-staged/NAME-SESSION-ID, and the tools translate paths
// both ways, so the agent still sees the host's.
func SessionGuestPath(workdir, name, guestHome, id string) (p string, same bool) {
	if name == "" {
		return GuestPathFor(workdir, guestHome, id)
	}
	return relocated(path.Clean(workdir), path.Clean(guestHome), name+"-"+id), false
}

// relocated is the path under guestHome's RelocatedDir for workdir, told apart by suffix.
func relocated(workdir, guestHome, suffix string) string {
	name := path.Base(workdir)
	if name == "/" || name == "." {
		name = "root"
	}
	return path.Join(guestHome, RelocatedDir, name+"-"+suffix)
}

func collides(workdir, guestHome string) bool {
	if workdir == "/" || tree.Within(guestHome, workdir) || tree.Within(workdir, guestHome) {
		return true
	}
	for _, d := range systemDirs {
		if tree.Within(d, workdir) {
			return true
		}
	}
	return false
}
