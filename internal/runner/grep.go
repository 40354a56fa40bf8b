package runner

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/limactl-mcp/limactl-mcp/internal/gitgrep"
	"github.com/limactl-mcp/limactl-mcp/internal/runner/procenv"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// runGrep searches like `git grep -n --no-index -I -E`, run inside Dir so that paths come out
// relative to it (passing Dir as an absolute path makes git 2.39 abort with
// "BUG: environment.c:211"). Without git, a built-in search gives the same output format.
func runGrep(req *runnerproto.GrepRequest) *runnerproto.GrepResult {
	if !req.NoGit {
		if git, err := procenv.LookPath("git"); err == nil {
			return gitGrep(git, req)
		}
	}
	return builtinGrep(req)
}

func gitGrep(git string, req *runnerproto.GrepRequest) *runnerproto.GrepResult {
	args := gitgrep.Args(req.Pattern, req.Include)
	var stdout, stderr bytes.Buffer
	lw := &limitWriter{w: &stdout, n: req.MaxBytes}
	cmd := &exec.Cmd{Path: git, Args: args, Dir: req.Dir}
	var outs []*output
	var err error
	procenv.Hold(func() { outs, err = startCommand(cmd, lw, &stderr) })
	if err == nil {
		err = cmd.Wait()
		collect(outs, nil) // git leaves nothing running: its output is read to the end
	}
	res := &runnerproto.GrepResult{Engine: "git", Output: trimToLine(stdout.String(), lw.cut), Truncated: lw.cut}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() == 1 && stderr.Len() == 0:
		// no match
	case lw.cut:
		// git was killed by the closed pipe after the limit; the output so far is the answer
	default:
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		res.Error = msg
		res.BadPattern = gitgrep.IsBadPatternMessage(msg)
	}
	return res
}

// errStop ends a walk early.
var errStop = errors.New("stop")

// trimToLine drops a partial last line from cut output.
func trimToLine(s string, cut bool) string {
	if !cut {
		return s
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[:i+1]
	}
	return ""
}

func builtinGrep(req *runnerproto.GrepRequest) *runnerproto.GrepResult {
	res := &runnerproto.GrepResult{Engine: "builtin"}
	re, err := regexp.Compile(req.Pattern)
	if err != nil {
		res.BadPattern = true
		res.Error = err.Error()
		return res
	}
	var out bytes.Buffer
	err = filepath.WalkDir(req.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skip, as git grep does
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != req.Dir {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(req.Dir, p)
		if req.Include != "" && !includeMatches(req.Include, rel) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || tree.IsBinary(data) {
			return nil // unreadable or binary
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Bytes()
			if !re.Match(line) {
				continue
			}
			entry := rel + ":" + strconv.Itoa(n) + ":" + string(line) + "\n"
			if req.MaxBytes > 0 && out.Len()+len(entry) > req.MaxBytes {
				res.Truncated = true
				return errStop
			}
			out.WriteString(entry)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		res.Error = err.Error()
	}
	res.Output = out.String()
	return res
}

// includeMatches applies an include glob the way a git pathspec does: `*` may cross
// directories, and a pattern without a slash also matches the base name.
func includeMatches(pattern, rel string) bool {
	if ok, _ := doublestar.Match(pattern, rel); ok {
		return true
	}
	if ok, _ := path.Match(strings.ReplaceAll(pattern, "**/", ""), path.Base(rel)); ok && !strings.Contains(pattern, "/") {
		return true
	}
	if ok, _ := doublestar.Match("**/"+pattern, rel); ok {
		return true
	}
	return false
}
