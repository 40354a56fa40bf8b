package reviewcmd_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/discardcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/statuscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/synccmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// Several sessions of one working directory, against a real sshd: each is a copy of its own;
// applying one is a host edit to the others (a conflict where they changed the same file);
// sync, status and discard act on the session named; the unnamed session is untouched.
func TestSessionsOfOneWorkdir(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"shared.txt": "one\n", "other.txt": "x\n"})
	alpha, beta := f.AddSession("alpha"), f.AddSession("beta")
	if alpha == beta || alpha == f.GuestPath || !strings.Contains(alpha, "/"+staging.RelocatedDir+"/proj-alpha-") {
		t.Fatalf("guest paths: default %s, alpha %s, beta %s", f.GuestPath, alpha, beta)
	}
	f.GuestAt(alpha, "echo A > shared.txt")
	f.GuestAt(beta, "echo B > shared.txt && echo new > b-only.txt")

	// Status lists the three, the unnamed one first, each with its own pending changes.
	// The fields of status --json this test reads.
	var st struct {
		Sessions []struct {
			Session      string `json:"session"`
			GuestPath    string `json:"guest_path"`
			PendingTotal int    `json:"pending_total"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(status(t, f, true, "")), &st); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range st.Sessions {
		got = append(got, s.Session+":"+s.GuestPath+":"+string(rune('0'+s.PendingTotal)))
	}
	if want := []string{":" + f.GuestPath + ":0", "alpha:" + alpha + ":1", "beta:" + beta + ":2"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("status --json sessions:\n%v\nwant\n%v", got, want)
	}
	text := status(t, f, false, "beta")
	if !strings.HasPrefix(text, f.Workdir+"  [session beta]\n") || strings.Contains(text, "alpha") || !strings.Contains(text, "`limactl mcp review sshd-test --session beta`") {
		t.Errorf("status --session beta:\n%s", text)
	}

	if text := status(t, f, false, "gamma"); text != "No session called \"gamma\" in instance \"sshd-test\". An agent running `limactl mcp serve --session gamma sshd-test` in a project directory creates one; `limactl mcp status sshd-test` lists every session.\n" {
		t.Errorf("status --session gamma: %q", text)
	}

	// Review alpha: its change reaches the host, and says how to undo it.
	r := run(t, f, reviewcmd.Options{Session: "alpha", Yes: true}, false)
	if r.err != nil || !strings.Contains(r.out, "`limactl mcp review sshd-test --session alpha --undo`") || f.ReadHost("shared.txt") != "A\n" {
		t.Fatalf("review alpha: %v\n%s%s\nhost: %q", r.err, r.out, r.errOut, f.ReadHost("shared.txt"))
	}
	// Beta: shared.txt is a conflict now; --yes applies the rest and leaves it.
	r = run(t, f, reviewcmd.Options{Session: "beta", JSON: true}, false)
	if r.err != nil || !strings.Contains(r.out, `"session": "beta",`) || !strings.Contains(r.out, `"path": "shared.txt",
      "kind": "modified",
      "conflict": true`) {
		t.Errorf("review beta --json: %v\n%s", r.err, r.out)
	}
	r = run(t, f, reviewcmd.Options{Session: "beta", Yes: true}, false)
	if r.err != nil || f.ReadHost("shared.txt") != "A\n" || f.ReadHost("b-only.txt") != "new\n" {
		t.Errorf("review beta --yes: %v\n%s%s", r.err, r.out, r.errOut)
	}
	// The unnamed session saw alpha's and beta's applies as host edits, nothing of its own.
	if r := run(t, f, reviewcmd.Options{JSON: true}, false); r.err != nil || !strings.Contains(r.out, `"items": []`) {
		t.Errorf("the unnamed session's review: %v\n%s", r.err, r.out)
	}

	// sync --session alpha brings the host's edits into alpha's copy only.
	f.WriteHost("other.txt", "y\n")
	ios, _, out, errOut := iostreams.Test()
	if err := synccmd.Run(context.Background(), &synccmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Session: "alpha", Open: f.Opener()}); err != nil {
		t.Fatalf("sync alpha: %v\n%s", err, errOut)
	}
	if a, b := f.GuestAt(alpha, "cat other.txt b-only.txt"), f.GuestAt(beta, "cat other.txt"); a != "y\nnew\n" || b != "x\n" {
		t.Errorf("after sync alpha: alpha has %q, beta %q\n%s", a, b, out)
	}

	// A session that does not exist is named, with the ones that do.
	r = run(t, f, reviewcmd.Options{Session: "gamma", Yes: true}, false)
	if r.err == nil || !strings.Contains(r.err.Error(), `has no staged session "gamma" in instance "sshd-test": an agent's `+"`limactl mcp serve --session gamma sshd-test`"+` run in that directory creates one; its sessions there: default, alpha, beta`) {
		t.Errorf("review of a missing session: %v", r.err)
	}
	if r := run(t, f, reviewcmd.Options{Session: "no/such"}, false); r.err == nil || !strings.Contains(r.err.Error(), "--session") {
		t.Errorf("a bad name: %v", r.err)
	}

	// Discard alpha: beta and the unnamed session stay, alpha's copy goes.
	ios, _, out, _ = iostreams.Test()
	if err := discardcmd.Run(context.Background(), &discardcmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Session: "alpha", Yes: true, Open: f.Opener()}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "(session alpha)") {
		t.Errorf("discard says %q", out)
	}
	if err := json.Unmarshal([]byte(status(t, f, true, "")), &st); err != nil || len(st.Sessions) != 2 || st.Sessions[1].Session != "beta" {
		t.Errorf("after discarding alpha: %+v %v", st.Sessions, err)
	}
	if got := f.Srv.Run(t, "bash", "-c", "test -e "+alpha+" && echo there || echo gone"); got != "gone\n" {
		t.Errorf("alpha's copy is %s", got)
	}
	if got := f.GuestAt(beta, "cat shared.txt"); got != "B\n" {
		t.Errorf("beta's copy after alpha's discard: %q", got)
	}
}

// status runs `status` (--json if asJSON, --session session) on f's instance.
func status(t *testing.T, f *sessiontest.Fixture, asJSON bool, session string) string {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	if err := statuscmd.Run(context.Background(), &statuscmd.Options{IO: ios, Instance: sessiontest.Instance, JSON: asJSON, Session: session, Open: f.Opener()}); err != nil {
		t.Fatalf("status: %v\n%s", err, errOut)
	}
	return out.String()
}
