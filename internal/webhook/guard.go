package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// ErrDestinationRefused is the error of an attempt whose destination
// resolved to an address deliveries may not go to.
var ErrDestinationRefused = errors.New("destination refused")

// specialRange is one entry of the table below: a range and what it is.
type specialRange struct {
	prefix netip.Prefix
	what   string
}

func special(prefix, what string) specialRange {
	return specialRange{netip.MustParsePrefix(prefix), what}
}

// specialPurpose is every entry of IANA's IPv4 and IPv6 Special-Purpose
// Address Registries (https://www.iana.org/assignments/iana-ipv4-special-registry,
// https://www.iana.org/assignments/iana-ipv6-special-registry, as of 2025),
// plus the multicast blocks and the deprecated ranges that still reach
// nothing public. No Go library maintains this list (net/netip knows
// loopback, private, link-local, multicast and unspecified only), so it is
// kept here; an entry added to a registry is added to this table and to
// TestRefusedReasonCoversTheIANARegistries.
//
// None of them is a webhook subscriber: they are this network, private and
// shared space, documentation and benchmarking ranges (which a test
// network or a careless DNS record may route somewhere internal), anycast
// services of the Internet's own infrastructure, and the IPv6 transition
// prefixes (Teredo, 6to4, NAT64) whose addresses name a gateway that
// forwards to an IPv4 address of someone else's choosing. A subscriber
// reachable only through one of them needs allow_private on its entry.
var specialPurpose = []specialRange{
	// IPv4 (RFC 6890 and the registry's later entries).
	special("0.0.0.0/8", `"this network" (RFC 791)`),
	special("10.0.0.0/8", "private-use (RFC 1918)"),
	special("100.64.0.0/10", "shared address space, carrier-grade NAT (RFC 6598)"),
	special("127.0.0.0/8", "loopback (RFC 1122)"),
	special("169.254.0.0/16", "link-local (RFC 3927)"),
	special("172.16.0.0/12", "private-use (RFC 1918)"),
	special("192.0.0.0/24", "IETF protocol assignments (RFC 6890)"),
	special("192.0.2.0/24", "documentation, TEST-NET-1 (RFC 5737)"),
	special("192.31.196.0/24", "AS112-v4 (RFC 7535)"),
	special("192.52.193.0/24", "AMT (RFC 7450)"),
	special("192.88.99.0/24", "deprecated 6to4 relay anycast (RFC 7526)"),
	special("192.168.0.0/16", "private-use (RFC 1918)"),
	special("192.175.48.0/24", "direct delegation AS112 service (RFC 7534)"),
	special("198.18.0.0/15", "benchmarking (RFC 2544)"),
	special("198.51.100.0/24", "documentation, TEST-NET-2 (RFC 5737)"),
	special("203.0.113.0/24", "documentation, TEST-NET-3 (RFC 5737)"),
	special("224.0.0.0/4", "multicast (RFC 5771)"),
	special("240.0.0.0/4", "reserved (RFC 1112), and the limited broadcast address"),

	// IPv6 (RFC 6890 and the registry's later entries).
	special("::/128", "unspecified (RFC 4291)"),
	special("::1/128", "loopback (RFC 4291)"),
	special("::/96", "deprecated IPv4-compatible (RFC 4291)"),
	special("64:ff9b::/96", "NAT64 well-known prefix (RFC 6052)"),
	special("64:ff9b:1::/48", "local-use IPv4/IPv6 translation (RFC 8215)"),
	special("100::/64", "discard-only (RFC 6666)"),
	special("100:0:0:1::/64", "dummy IPv6 prefix (RFC 9780)"),
	special("2001::/32", "Teredo (RFC 4380)"),
	special("2001::/23", "IETF protocol assignments (RFC 2928): benchmarking, AMT, AS112, ORCHID, DRIP"),
	special("2001:db8::/32", "documentation (RFC 3849)"),
	special("2002::/16", "6to4 (RFC 3056)"),
	special("2620:4f:8000::/48", "direct delegation AS112 service (RFC 7534)"),
	special("3fff::/20", "documentation (RFC 9637)"),
	special("5f00::/16", "segment routing SIDs (RFC 9602)"),
	special("fc00::/7", "unique-local (RFC 4193)"),
	special("fe80::/10", "link-local (RFC 4291)"),
	special("fec0::/10", "deprecated site-local (RFC 3879)"),
	special("ff00::/8", "multicast (RFC 4291)"),
}

// RefusedReason says why deliveries may not go to ip without allow_private,
// or "" when they may: any address of the special-purpose table above
// (loopback, private, link-local, documentation, benchmarking, the
// transition prefixes, ...). An IPv4-mapped IPv6 address is judged as the
// IPv4 address it is.
func RefusedReason(ip netip.Addr) string {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return "invalid address"
	}
	// The most specific entry names the range (Teredo inside 2001::/23).
	best := -1
	for i, r := range specialPurpose {
		if r.prefix.Contains(ip) && (best < 0 || r.prefix.Bits() > specialPurpose[best].prefix.Bits()) {
			best = i
		}
	}
	if best >= 0 {
		return specialPurpose[best].what + " address"
	}
	// What net/netip classifies beyond the table (none today; kept so a
	// table edit cannot open these).
	switch {
	case ip.IsLoopback(), ip.IsPrivate(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(),
		ip.IsUnspecified(), ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "non-public address"
	}
	return ""
}

// guardControl is a net.Dialer Control function: it runs after name
// resolution, on the address about to be connected, so a name that
// resolves to a public address when checked and a private one when used
// (DNS rebinding) is still refused.
func guardControl(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDestinationRefused, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s is not an IP address", ErrDestinationRefused, host)
	}
	if why := RefusedReason(ip); why != "" {
		return fmt.Errorf("%w: %s is a %s (set allow_private: true on the endpoint to allow it)", ErrDestinationRefused, ip, why)
	}
	return nil
}
