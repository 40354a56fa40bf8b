package networkcmd

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

var update = flag.Bool("update", false, "rewrite docs/network.md's list of presets from the table")

// docs/network.md lists exactly the presets of the table, between its presets markers.
func TestDocsListThePresets(t *testing.T) {
	data, err := os.ReadFile("../../../docs/network.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	before, after, ok := strings.Cut(doc, "<!-- presets:begin")
	if !ok {
		t.Fatal("docs/network.md has no <!-- presets:begin ... --> marker")
	}
	comment, after, _ := strings.Cut(after, "-->\n")
	got, rest, ok := strings.Cut(after, "<!-- presets:end -->")
	if !ok {
		t.Fatal("docs/network.md has no <!-- presets:end --> marker")
	}
	want := markdown(netpolicy.Presets())
	if *update && got != want {
		doc = before + "<!-- presets:begin" + comment + "-->\n" + want + "<!-- presets:end -->" + rest
		if err := os.WriteFile("../../../docs/network.md", []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		t.Errorf("docs/network.md's presets differ from internal/netpolicy/presets.go (go test ./internal/command/networkcmd -run TestDocsListThePresets -update rewrites them); the table:\n%s", want)
	}
}

func TestRunPresets(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	if err := RunPresets(context.Background(), &PresetsOptions{IO: ios}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, p := range netpolicy.Presets() {
		if !strings.Contains(text, "@"+p.Name+" ") || !strings.Contains(text, strings.Join(p.Hosts, ", ")+"\n") {
			t.Errorf("the list does not show @%s with its hosts:\n%s", p.Name, text)
		}
	}
	if !strings.Contains(text, "allow:@go,@npm,example.com") {
		t.Errorf("the list does not say how to use them:\n%s", text)
	}

	ios, _, out, _ = iostreams.Test()
	if err := RunPresets(context.Background(), &PresetsOptions{IO: ios, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var got struct{ Presets []netpolicy.Preset }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if len(got.Presets) != len(netpolicy.Presets()) || got.Presets[0].Name != "go" || len(got.Presets[0].Hosts) == 0 {
		t.Errorf("--json: %+v", got.Presets)
	}
}

// docs/network.md lists exactly the detection table, between its detect markers.
func TestDocsListTheDetection(t *testing.T) {
	data, err := os.ReadFile("../../../docs/network.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	before, after, ok := strings.Cut(doc, "<!-- detect:begin")
	if !ok {
		t.Fatal("docs/network.md has no <!-- detect:begin ... --> marker")
	}
	comment, after, _ := strings.Cut(after, "-->\n")
	got, rest, ok := strings.Cut(after, "<!-- detect:end -->")
	if !ok {
		t.Fatal("docs/network.md has no <!-- detect:end --> marker")
	}
	want := detectionMarkdown(netpolicy.Detectors())
	if *update && got != want {
		doc = before + "<!-- detect:begin" + comment + "-->\n" + want + "<!-- detect:end -->" + rest
		if err := os.WriteFile("../../../docs/network.md", []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		t.Errorf("docs/network.md's detection table differs from internal/netpolicy/detect.go (go test ./internal/command/networkcmd -run TestDocsListTheDetection -update rewrites it); the table:\n%s", want)
	}
}
