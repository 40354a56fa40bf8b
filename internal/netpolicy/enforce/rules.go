package enforce

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

const (
	// chainName is jumped to first thing in OUTPUT; it holds one block of rules per agent user.
	chainName = "LIMACTL-MCP"
	// refuseChain logs (rate-limited) and refuses what an agent user may not send.
	refuseChain = "LIMACTL-MCP-REFUSE"
	// LogPrefix starts the kernel log line of every refused packet that the rate limit lets
	// through; the proxy daemon follows /dev/kmsg for it.
	LogPrefix = "limactl-mcp-net: "
	// rulesStamp starts the comment that carries the hash of the rules, so that ensure can tell
	// from one iptables-save that nothing needs to change.
	rulesStamp = "limactl-mcp rules "
)

// family is IPv4 (iptables) or IPv6 (ip6tables): the commands and the ICMP refusals differ.
type family struct {
	name, save, restore string
	icmpUnreachable     string // for UDP: the port is not there
	icmpProhibited      string // for anything else: administratively prohibited
}

var (
	ipv4 = family{"IPv4", "iptables-save", "iptables-restore", "icmp-port-unreachable", "icmp-admin-prohibited"}
	ipv6 = family{"IPv6", "ip6tables-save", "ip6tables-restore", "icmp6-port-unreachable", "icmp6-adm-prohibited"}
)

// chainRules are the rules of both chains for these users (without the stamp): per user,
// loopback is allowed except DNS (port 53: the stub resolver at 127.0.0.53 would carry names
// out), everything else refused. The refusal is a TCP reset or an ICMP error, so that a client
// fails at once instead of waiting for a timeout.
func chainRules(fam family, users []UserPolicy) []string {
	var rules []string
	for _, u := range users {
		owner := fmt.Sprintf("-m owner --uid-owner %d", u.UID)
		rules = append(rules,
			fmt.Sprintf("-A %s -o lo -p udp -m udp --dport 53 %s -j %s", chainName, owner, refuseChain),
			fmt.Sprintf("-A %s -o lo -p tcp -m tcp --dport 53 %s -j %s", chainName, owner, refuseChain),
			fmt.Sprintf("-A %s -o lo %s -j RETURN", chainName, owner),
			fmt.Sprintf("-A %s %s -j %s", chainName, owner, refuseChain),
		)
	}
	return append(rules,
		fmt.Sprintf(`-A %s -m limit --limit 20/second --limit-burst 50 -j LOG --log-prefix %q --log-uid`, refuseChain, LogPrefix),
		fmt.Sprintf("-A %s -p tcp -j REJECT --reject-with tcp-reset", refuseChain),
		fmt.Sprintf("-A %s -p udp -j REJECT --reject-with %s", refuseChain, fam.icmpUnreachable),
		fmt.Sprintf("-A %s -j REJECT --reject-with %s", refuseChain, fam.icmpProhibited),
	)
}

// rulesHash names a set of rules; it is in the stamp comment.
func rulesHash(rules []string) string {
	h := sha256.Sum256([]byte(strings.Join(rules, "\n")))
	return hex.EncodeToString(h[:8])
}

// restoreInput is what iptables-restore --noflush is given to make the chains exactly the
// rules (the filter table's commit is one transaction: no moment with half the rules), and to
// put the jump first in OUTPUT when it is not there already (current is iptables-save's
// output). It is empty when the chains already hold these rules and the jump is first.
func restoreInput(rules []string, current string) string {
	stamp := rulesStamp + rulesHash(rules)
	inPlace := strings.Contains(current, stamp)
	jumps, jumpFirst := outputJumps(current)
	if inPlace && jumps == 1 && jumpFirst {
		return ""
	}
	var b strings.Builder
	b.WriteString("*filter\n")
	fmt.Fprintf(&b, ":%s - [0:0]\n:%s - [0:0]\n", chainName, refuseChain)
	fmt.Fprintf(&b, "-F %s\n-F %s\n", chainName, refuseChain)
	fmt.Fprintf(&b, "-A %s -m comment --comment %q\n", chainName, stamp)
	for _, r := range rules {
		b.WriteString(r + "\n")
	}
	if jumps != 1 || !jumpFirst {
		for i := 0; i < jumps; i++ {
			fmt.Fprintf(&b, "-D OUTPUT -j %s\n", chainName)
		}
		fmt.Fprintf(&b, "-I OUTPUT 1 -j %s\n", chainName)
	}
	b.WriteString("COMMIT\n")
	return b.String()
}

// outputJumps counts the rules of the filter table's OUTPUT that jump to our chain, and says
// whether the first OUTPUT rule is one (iptables-save lists a chain's rules in order).
func outputJumps(save string) (count int, first bool) {
	inFilter := false
	seenOutput := false
	for _, line := range strings.Split(save, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "*"):
			inFilter = line == "*filter"
		case inFilter && strings.HasPrefix(line, "-A OUTPUT "):
			isJump := line == "-A OUTPUT -j "+chainName
			if isJump {
				count++
			}
			if !seenOutput {
				first = isJump
				seenOutput = true
			}
		}
	}
	return count, first
}
