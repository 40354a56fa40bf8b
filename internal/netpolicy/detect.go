package netpolicy

import (
	"os"
	"path/filepath"
	"slices"
)

// detectTable is THE list of what in a project says which preset its dependencies need:
// `limactl mcp configure` proposes the presets of the files a project has at its top (docs/
// network.md lists it). A file names one preset; a preset may have several files.
var detectTable = []Detector{
	{[]string{"go.mod", "go.work"}, "go"},
	{[]string{"package.json", "package-lock.json", "yarn.lock", "pnpm-lock.yaml"}, "npm"},
	{[]string{"requirements.txt", "pyproject.toml", "setup.py", "setup.cfg", "Pipfile", "poetry.lock", "uv.lock"}, "pypi"},
	{[]string{"Cargo.toml", "Cargo.lock"}, "crates"},
	{[]string{"Gemfile", "Gemfile.lock", "*.gemspec"}, "rubygems"},
	{[]string{"pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts", "gradlew"}, "maven"},
}

// Detector is a row of the detection table: the files that propose a preset.
type Detector struct {
	Files  []string
	Preset string
}

// Detection is a preset proposed for a project, and the file that made it.
type Detection struct {
	Preset string `json:"preset"`
	File   string `json:"file"`
}

// DetectPresets lists the presets the project in dir seems to need, in the table's order, each
// with the first file of the table found at dir's top (no walk: a file's name is all that is
// looked at, with Lstat, so nothing in the project is read or followed).
func DetectPresets(dir string) []Detection {
	var out []Detection
	for _, row := range detectTable {
		for _, f := range row.Files {
			if found := present(dir, f); found != "" {
				out = append(out, Detection{Preset: row.Preset, File: found})
				break
			}
		}
	}
	return out
}

// present is the name of a file matching pattern at dir's top ("" when there is none).
func present(dir, pattern string) string {
	matches, _ := filepath.Glob(filepath.Join(dir, pattern))
	slices.Sort(matches)
	for _, m := range matches {
		if _, err := os.Lstat(m); err == nil {
			return filepath.Base(m)
		}
	}
	return ""
}

// ProposedPolicy is the allow policy of the presets detected ("" when none was).
func ProposedPolicy(found []Detection) string {
	if len(found) == 0 {
		return ""
	}
	spec := "allow:"
	for i, d := range found {
		if i > 0 {
			spec += ","
		}
		spec += "@" + d.Preset
	}
	return spec
}

// Detectors is the detection table, for the docs and help.
func Detectors() []Detector {
	out := make([]Detector, len(detectTable))
	for i, d := range detectTable {
		out[i] = Detector{Files: slices.Clone(d.Files), Preset: d.Preset}
	}
	return out
}
