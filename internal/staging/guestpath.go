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
	name := path.Base(workdir)
	if name == "/" || name == "." {
		name = "root"
	}
	return path.Join(guestHome, RelocatedDir, name+"-"+id), false
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
