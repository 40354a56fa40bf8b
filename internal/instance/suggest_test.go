package instance

import (
	"errors"
	"strings"
	"testing"
)

func TestNotExistSuggests(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
		want  []string
	}{
		{"confz", []string{"confs", "default"}, []string{`no such Lima instance "confz": did you mean "confs"?`, "instances: confs, default", "limactl start --mount-none --name=confz"}},
		{"defualt", []string{"agent", "default"}, []string{`did you mean "default"?`}},
		{"ag", []string{"agent", "default"}, []string{`did you mean "agent"?`}},
		{"zzz", []string{"agent", "default"}, []string{`no such Lima instance "zzz" (instances: agent, default): create it with`}},
		{"agent", nil, []string{"there are no instances yet", "limactl start --mount-none --name=agent template:default"}},
	} {
		err := notExist(tc.name, tc.names)
		if !errors.Is(err, ErrNotExist) {
			t.Errorf("%s: not ErrNotExist: %v", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, err, w)
			}
		}
		if strings.Contains(tc.want[0], "zzz") && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%s: suggests something far: %v", tc.name, err)
		}
	}
}
