package shellcmd

import (
	"bytes"
	"reflect"
	"testing"
)

// The filter keeps the probe's lines, wherever they start and however the writes split them,
// and passes everything else through unchanged, including a lone RS.
func TestProbeFilter(t *testing.T) {
	const prefix = "\x1elimactl-mcp-abc:"
	in := "hello\nno newline at the end" + prefix + "copy=1\n" + "\x1e not ours\n" + prefix + "changed=0\n" + "tail\x1elim"
	want := "hello\nno newline at the end\x1e not ours\ntail\x1elim"
	for _, size := range []int{1, 2, 3, 7, len(in)} {
		var out bytes.Buffer
		f := newProbeFilter(&out, prefix)
		for i := 0; i < len(in); i += size {
			if _, err := f.Write([]byte(in[i:min(i+size, len(in))])); err != nil {
				t.Fatal(err)
			}
		}
		lines := f.Lines()
		if out.String() != want || !reflect.DeepEqual(lines, []string{"copy=1", "changed=0"}) {
			t.Errorf("writes of %d: out %q lines %q", size, out.String(), lines)
		}
	}
}
