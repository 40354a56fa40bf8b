package cmdutil_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// Two processes of one session on a real sshd (serve and shell: each resolves its secrets and
// opens the session as the commands do) give the guest the same placeholders and CA; discard
// removes them with the session's state.
func TestTwoOpensShareSecrets(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	lookup := func(name string) (string, bool) {
		switch name {
		case "ANTHROPIC_API_KEY":
			return "sk-ant-api03-the-value-0123456789", true
		case "GITHUB_TOKEN":
			return "ghp_the-gh-value-0123456789", true
		}
		return "", false
	}
	ctx := context.Background()
	type opened struct {
		env   []string
		ca    string
		close func()
	}
	open := func(flags cmdutil.SecretFlags) opened {
		t.Helper()
		set, err := cmdutil.ResolveSecrets(ctx, flags, lookup)
		if err != nil {
			t.Fatal(err)
		}
		ios, _, _, _ := iostreams.Test()
		ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "shell", Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener()})
		if err != nil {
			t.Fatal(err)
		}
		tg, err := ref.OpenInstance(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sess, err := tg.Session(f.Workdir, "")
		if err != nil {
			t.Fatal(err)
		}
		plan, err := tg.PlanSession(f.Workdir, "", sess.State, "allow:@npm")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cmdutil.WireSecrets(tg, plan, set, nil); err != nil {
			t.Fatal(err)
		}
		setup := plan.Net.Agent.Secrets.Setup
		return opened{env: setup.Env, ca: setup.CAPEM, close: tg.Close}
	}
	serve := open(cmdutil.SecretFlags{Agent: true})
	defer serve.close()
	shell := open(cmdutil.SecretFlags{Specs: []string{"ANTHROPIC_API_KEY"}})
	defer shell.close()
	if strings.Join(shell.env, " ") != strings.Join(serve.env, " ") || shell.ca != serve.ca {
		t.Fatalf("the second open gives the guest %v, the first %v (same CA: %v)", shell.env, serve.env, shell.ca == serve.ca)
	}
	wider := open(cmdutil.SecretFlags{Specs: []string{"ANTHROPIC_API_KEY", "GITHUB_TOKEN"}})
	defer wider.close()
	if len(wider.env) != 2 || wider.env[0] != serve.env[0] {
		t.Errorf("a third with one more secret: %v, want %s first", wider.env, serve.env[0])
	}

	dir := f.Store.SessionDir(staging.SessionIDOf(f.Workdir, ""))
	if _, err := os.Lstat(filepath.Join(dir, secrets.PlaceholdersFile)); err != nil {
		t.Fatalf("the placeholders are not kept in the session's state: %v", err)
	}
	tg, err := f.Opener()(ctx, sessiontest.Instance)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	sess, err := tg.Session(f.Workdir, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, secrets.PlaceholdersFile)); !os.IsNotExist(err) {
		t.Errorf("discard left the placeholders: %v", err)
	}
}
