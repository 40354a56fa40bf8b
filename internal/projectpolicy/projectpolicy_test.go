package projectpolicy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSaveLoad(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	work := t.TempDir()
	if _, _, ok, err := Load(work); ok || err != nil {
		t.Fatalf("a project without a policy: ok %v, %v", ok, err)
	}
	path, err := Save(work, "allow:@GO,example.com:ro")
	if err != nil {
		t.Fatal(err)
	}
	if tree := filepath.Dir(path); strings.HasPrefix(tree, work) {
		t.Fatalf("the policy file %s is in the project", path)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the file: %v %v", fi, err)
	}
	f, got, ok, err := Load(work)
	if err != nil || !ok || got != path || f.Network != "allow:@go,example.com:ro" {
		t.Fatalf("Load = %+v %q %v %v", f, got, ok, err)
	}
	// Another project has its own file.
	if _, _, ok, err := Load(t.TempDir()); ok || err != nil {
		t.Errorf("another project: ok %v, %v", ok, err)
	}
	if _, err := Save(work, "allow:"); err == nil {
		t.Error("a bad policy was saved")
	}
}

func TestLoadRefusesWhatIsNotOurs(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	work := t.TempDir()
	path, err := Save(work, "none")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"not json":        "{",
		"another project": `{"workdir":"/elsewhere","network":"open"}`,
		"a bad policy":    `{"workdir":"` + work + `","network":"allow:a b"}`,
		"too long":        strings.Repeat(" ", maxFileBytes+1),
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, ok, err := Load(work); ok || err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: ok %v, %v", name, ok, err)
		}
	}
}

func TestRefusesAFileInsideTheProject(t *testing.T) {
	work := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(work, ".config"))
	if _, err := Save(work, "none"); err == nil || !strings.Contains(err.Error(), "inside the project") {
		t.Fatalf("Save in the project: %v", err)
	}
	if _, _, _, err := Load(work); err == nil {
		t.Fatal("Load in the project: no error")
	}
	if _, err := os.Stat(filepath.Join(work, ".config")); err == nil {
		t.Error("something was made in the project")
	}
}
