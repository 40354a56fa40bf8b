package netpolicy

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxRelayLine bounds the line the guest's proxy writes first on a connection to a session's
// relay (RelayLine), its newline included.
const MaxRelayLine = 16 << 10

// RelayLine is what the guest's proxy writes first, on a line of its own, on a connection it
// hands to the session's relay on the host: the target (host:port: a bound host, or one that
// method and path rules only name), for a rule target the rules the policy holds for it now,
// and, for a relay that reads it (the set-up said so: EnsureResult's policy file), the command
// line of the agent's process behind the connection, which the relay logs beside a request it
// refuses so that `watch` names it as it names the proxy's refusals. The command is the agent's
// text: shown escaped, never acted on.
type RelayLine struct {
	Target  string
	Rules   []string
	Command string
}

// String is the line without its newline: "host:port", "host:port RULE,RULE...", then, for a
// rule target with a command, a space and the command in unpadded base64 (no space in it).
func (l RelayLine) String() string {
	s := l.Target
	if len(l.Rules) > 0 {
		s += " " + strings.Join(l.Rules, ",")
		if l.Command != "" {
			s += " " + base64.RawStdEncoding.EncodeToString([]byte(l.Command))
		}
	}
	return s
}

// ParseRelayLine reads a line String wrote. The target and the rules are checked by their
// users (the relay against its own bound hosts and rule targets); a command that does not
// decode, is not valid UTF-8 or is longer than MaxEntryCommand is left out (the connection is
// served without it); anything after the command is an error.
func ParseRelayLine(s string) (RelayLine, error) {
	if len(s) >= MaxRelayLine {
		return RelayLine{}, fmt.Errorf("the proxy's line is longer than %d bytes", MaxRelayLine)
	}
	f := strings.Split(s, " ")
	if len(f) > 3 || f[0] == "" {
		return RelayLine{}, fmt.Errorf("the proxy's line %q is not a target, its rules and a command", s)
	}
	l := RelayLine{Target: f[0]}
	if len(f) >= 2 {
		if f[1] == "" {
			return RelayLine{}, fmt.Errorf("the proxy's line %q has no rules after its target", s)
		}
		l.Rules = strings.Split(f[1], ",")
	}
	if len(f) == 3 {
		if b, err := base64.RawStdEncoding.DecodeString(f[2]); err == nil && utf8.Valid(b) && len(b) <= MaxEntryCommand {
			l.Command = string(b)
		}
	}
	return l, nil
}
