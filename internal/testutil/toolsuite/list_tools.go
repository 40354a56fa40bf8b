package toolsuite

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/lima-vm/lima/v2/pkg/mcp/msi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// limaTools are the tools of Lima's bundled server, with the Go types it derives schemas from.
var limaTools = map[string][2]any{
	"list_directory":      {msi.ListDirectoryParams{}, msi.ListDirectoryResult{}},
	"read_file":           {msi.ReadFileParams{}, msi.ReadFileResult{}},
	"write_file":          {msi.WriteFileParams{}, msi.WriteFileResult{}},
	"glob":                {msi.GlobParams{}, msi.GlobResult{}},
	"search_file_content": {msi.SearchFileContentParams{}, msi.SearchFileContentResult{}},
	"run_shell_command":   {msi.RunShellCommandParams{}, msi.RunShellCommandResult{}},
}

func schemaOf(t *testing.T, v any) *jsonschema.Schema {
	t.Helper()
	var s *jsonschema.Schema
	var err error
	switch v.(type) {
	case msi.ListDirectoryParams:
		s, err = jsonschema.For[msi.ListDirectoryParams](nil)
	case msi.ListDirectoryResult:
		s, err = jsonschema.For[msi.ListDirectoryResult](nil)
	case msi.ReadFileParams:
		s, err = jsonschema.For[msi.ReadFileParams](nil)
	case msi.ReadFileResult:
		s, err = jsonschema.For[msi.ReadFileResult](nil)
	case msi.WriteFileParams:
		s, err = jsonschema.For[msi.WriteFileParams](nil)
	case msi.WriteFileResult:
		s, err = jsonschema.For[msi.WriteFileResult](nil)
	case msi.GlobParams:
		s, err = jsonschema.For[msi.GlobParams](nil)
	case msi.GlobResult:
		s, err = jsonschema.For[msi.GlobResult](nil)
	case msi.SearchFileContentParams:
		s, err = jsonschema.For[msi.SearchFileContentParams](nil)
	case msi.SearchFileContentResult:
		s, err = jsonschema.For[msi.SearchFileContentResult](nil)
	case msi.RunShellCommandParams:
		s, err = jsonschema.For[msi.RunShellCommandParams](nil)
	case msi.RunShellCommandResult:
		s, err = jsonschema.For[msi.RunShellCommandResult](nil)
	}
	if err != nil || s == nil {
		t.Fatalf("schema of %T: %v", v, err)
	}
	return s
}

// toSchema decodes a schema as a client received it.
func toSchema(t *testing.T, v any) *jsonschema.Schema {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// checkSuperset checks that ours accepts and returns everything Lima's does: every property
// of Lima's schema exists in ours with the same type, and what Lima requires we require too
// (inputs: no more than Lima requires, so a client written for Lima never misses a field).
func checkSuperset(t *testing.T, what string, lima, ours *jsonschema.Schema, input bool) {
	t.Helper()
	for name, lp := range lima.Properties {
		op, ok := ours.Properties[name]
		if !ok {
			t.Errorf("%s: property %q of Lima's schema is missing", what, name)
			continue
		}
		lt, ot := append(lp.Types, lp.Type), append(op.Types, op.Type)
		sort.Strings(lt)
		sort.Strings(ot)
		if !slices.Equal(slices.Compact(lt), slices.Compact(ot)) {
			t.Errorf("%s: property %q has type %v, Lima's has %v", what, name, ot, lt)
		}
	}
	if input {
		for _, r := range ours.Required {
			if !slices.Contains(lima.Required, r) {
				t.Errorf("%s: we require %q, which Lima's clients do not send", what, r)
			}
		}
	}
	for _, r := range lima.Required {
		if !slices.Contains(ours.Required, r) {
			t.Errorf("%s: Lima requires %q, we do not", what, r)
		}
	}
}

func testListTools(t *testing.T, env Env) {
	res, err := env.Session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	for _, name := range []string{"glob", "list_directory", "read_file", "run_shell_command", "search_file_content", "write_file", "replace",
		"read_background_output", "list_background_processes", "kill_background_process"} {
		if byName[name] == nil {
			t.Errorf("tool %q is missing", name)
		}
	}
	for name, types := range limaTools {
		tool := byName[name]
		if tool == nil {
			continue
		}
		lin, lout := schemaOf(t, types[0]), schemaOf(t, types[1])
		in, out := toSchema(t, tool.InputSchema), toSchema(t, tool.OutputSchema)
		checkSuperset(t, name+" input", lin, in, true)
		checkSuperset(t, name+" output", lout, out, false)
		// Every property beyond Lima's is a decision, listed in docs/compatibility.md.
		for i, pair := range [][2]*jsonschema.Schema{{lin, in}, {lout, out}} {
			var extra []string
			for p := range pair[1].Properties {
				if _, ok := pair[0].Properties[p]; !ok {
					extra = append(extra, p)
				}
			}
			if got, want := sorted(extra), documentedExtras[name][i]; !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Errorf("%s %s: properties beyond Lima's are %v; docs/compatibility.md lists %v", name, []string{"input", "output"}[i], got, want)
			}
		}
	}
	// Lima's own test (hack/bats/tests/mcp.bats) also pins run_shell_command's whole property
	// lists, which our optional extras extend (docs/compatibility.md). What a client written for
	// Lima depends on is checked here: the required lists, exactly as Lima's.
	rs := byName["run_shell_command"]
	in, out := toSchema(t, rs.InputSchema), toSchema(t, rs.OutputSchema)
	if !slices.Equal(sorted(in.Required), []string{"command", "directory"}) {
		t.Errorf("run_shell_command required inputs: %v", in.Required)
	}
	if !slices.Equal(sorted(out.Required), []string{"stderr", "stdout"}) {
		t.Errorf("run_shell_command required outputs: %v", out.Required)
	}
	for _, ro := range []string{"list_directory", "read_file", "glob", "search_file_content"} {
		if a := byName[ro].Annotations; a == nil || !a.ReadOnlyHint {
			t.Errorf("%s: not annotated read-only", ro)
		}
	}
	for _, rw := range []string{"write_file", "replace", "run_shell_command"} {
		if a := byName[rw].Annotations; a != nil && a.ReadOnlyHint {
			t.Errorf("%s: annotated read-only", rw)
		}
	}
}

// documentedExtras are the optional properties each of Lima's tools has beyond Lima's own
// schema, input and output, as docs/compatibility.md lists them (sorted).
var documentedExtras = map[string][2][]string{
	"list_directory":      {nil, {"truncated"}},
	"read_file":           {{"limit", "offset"}, {"binary", "end_line", "mime_type", "note", "size", "start_line", "total_lines", "truncated"}},
	"write_file":          {nil, nil},
	"glob":                {nil, {"truncated"}},
	"search_file_content": {nil, {"truncated"}},
	"run_shell_command":   {{"background", "timeout_seconds"}, {"background_id", "network_held", "note", "pid", "ports", "signal", "stderr_cut_bytes", "stdout_cut_bytes", "timed_out"}},
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}
