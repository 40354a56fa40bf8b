package toolsuite

import (
	"strings"
	"testing"
	"time"
)

func testRunShellCommand(t *testing.T, env Env) {
	s := env.Session
	t.Run("output", func(t *testing.T) {
		want := env.Shell(t, "cat /etc/os-release")
		r := MustOK(t, s, "run_shell_command", map[string]any{"directory": "/etc", "command": []string{"cat", "os-release"}})
		if r.Structured["stdout"] != want || r.Structured["stderr"] != "" || r.Structured["exit_code"] != 0.0 {
			t.Errorf("got %v", r.Structured)
		}
	})
	t.Run("stderr and exit code", func(t *testing.T) {
		r := MustOK(t, s, "run_shell_command", map[string]any{"directory": "/", "command": []string{"bash", "-c", "echo NO>&2; exit 13"}})
		if r.Structured["exit_code"] != 13.0 || r.Structured["error"] != "exit status 13" || r.Structured["stdout"] != "" || r.Structured["stderr"] != "NO\n" {
			t.Errorf("got %v", r.Structured)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		r := MustOK(t, s, "run_shell_command", map[string]any{"directory": "/etcetera", "command": []string{"cat", "os-release"}})
		if r.Structured["exit_code"] != 1.0 || !strings.Contains(r.Structured["stderr"].(string), "No such file or directory") {
			t.Errorf("got %v", r.Structured)
		}
	})
	t.Run("relative directory", func(t *testing.T) {
		MustError(t, s, "run_shell_command", map[string]any{"directory": "etc", "command": []string{"ls"}}, "expected an absolute path")
	})
	t.Run("empty command", func(t *testing.T) {
		MustError(t, s, "run_shell_command", map[string]any{"directory": "/", "command": []string{}}, "command is empty")
	})
	t.Run("missing fields", func(t *testing.T) {
		MustError(t, s, "run_shell_command", map[string]any{"command": []string{"true"}}, "directory")
		MustError(t, s, "run_shell_command", map[string]any{"directory": "/", "command": "true"}, "command")
		// A command line as one string: the error says what to send instead.
		MustError(t, s, "run_shell_command", map[string]any{"directory": "/", "command": "make && make test"},
			`"command" must be an array of strings`, `["bash","-c","make && make test"]`)
	})
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		r := MustOK(t, s, "run_shell_command", map[string]any{"directory": "/", "command": []string{"sh", "-c", "echo before; sleep 60"}, "timeout_seconds": 2})
		if r.Structured["timed_out"] != true || r.Structured["signal"] != "SIGKILL" || r.Structured["stdout"] != "before\n" ||
			!strings.Contains(r.Structured["error"].(string), "timed out after 2s") {
			t.Errorf("got %v", r.Structured)
		}
		if time.Since(start) > 30*time.Second {
			t.Errorf("took %v", time.Since(start))
		}
		MustError(t, s, "run_shell_command", map[string]any{"directory": "/", "command": []string{"true"}, "timeout_seconds": 0}, "timeout_seconds must be between")
	})
	t.Run("long output is cut in the middle", func(t *testing.T) {
		r := MustOK(t, s, "run_shell_command", map[string]any{"directory": "/", "command": []string{"sh", "-c", "echo FIRST; seq 1 200000; echo LAST"}})
		out := r.Structured["stdout"].(string)
		cut, _ := r.Structured["stdout_cut_bytes"].(float64)
		if !strings.HasPrefix(out, "FIRST\n1\n") || !strings.HasSuffix(out, "200000\nLAST\n") || cut <= 0 || !strings.Contains(out, "bytes cut") || len(out) > 100<<10 {
			t.Errorf("len %d cut %v head %q tail %q", len(out), cut, out[:20], out[len(out)-20:])
		}
	})
	t.Run("a background job holding the output is named, not waited for", func(t *testing.T) {
		if env.NoRunner {
			// An SSH session waits for every holder of its output, as `limactl shell` does:
			// the call takes as long as the job, and nothing is missing.
			start := time.Now()
			r := MustOK(t, s, "run_shell_command", map[string]any{"directory": "/", "command": []string{"sh", "-c", "sleep 2 & echo bg"}})
			if r.Structured["stdout"] != "bg\n" || r.Structured["note"] != nil || time.Since(start) < 2*time.Second {
				t.Errorf("got %v after %v", r.Structured, time.Since(start))
			}
			return
		}
		start := time.Now()
		r := MustOK(t, s, "run_shell_command", map[string]any{"directory": "/", "command": []string{"sh", "-c", "sleep 47.25 & echo bg"}})
		defer env.Shell(t, "pkill -f '[s]leep 47.25' || true")
		note, _ := r.Structured["note"].(string)
		if r.Structured["stdout"] != "bg\n" || r.Structured["exit_code"] != 0.0 || !strings.Contains(note, "sleep 47.25") || !strings.Contains(note, "not collected") {
			t.Errorf("got %v", r.Structured)
		}
		if time.Since(start) > 20*time.Second {
			t.Errorf("took %v", time.Since(start))
		}
	})
	t.Run("killed by a signal", func(t *testing.T) {
		r := MustOK(t, s, "run_shell_command", map[string]any{"directory": "/", "command": []string{"sh", "-c", "kill -KILL $$"}})
		if r.Structured["signal"] != "SIGKILL" || !strings.Contains(r.Structured["error"].(string), "SIGKILL") {
			t.Errorf("got %v", r.Structured)
		}
	})
	t.Run("arguments are not reinterpreted by a shell", func(t *testing.T) {
		r := MustOK(t, s, "run_shell_command", map[string]any{"directory": "/", "command": []string{"echo", "$HOME", "*", "a;b", "💡"}})
		if r.Structured["stdout"] != "$HOME * a;b 💡\n" {
			t.Errorf("got %q", r.Structured["stdout"])
		}
	})
}
