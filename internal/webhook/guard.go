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

// Address ranges beyond what net/netip classifies that are never a public
// subscriber.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT, shared address space
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use IPv4/IPv6 translation
}

// IPv6 ranges whose addresses carry an IPv4 address a gateway forwards to:
// NAT64 (the well-known prefix, RFC 6052, IPv4 in the last 32 bits) and
// 6to4 (RFC 3056, IPv4 in bits 16-47).
var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// RefusedReason says why deliveries may not go to ip without allow_private,
// or "" when they may: loopback, private (RFC 1918, IPv6 unique local),
// link-local, unspecified, multicast and a few reserved ranges.
// IPv4-mapped, NAT64 and 6to4 IPv6 addresses are judged as the IPv4
// address they carry, so a gateway cannot be used to reach a private one.
func RefusedReason(ip netip.Addr) string {
	ip = ip.Unmap()
	if b := ip.As16(); ip.Is6() && nat64Prefix.Contains(ip) {
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	} else if ip.Is6() && sixToFour.Contains(ip) {
		ip = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	}
	switch {
	case !ip.IsValid():
		return "invalid address"
	case ip.IsLoopback():
		return "loopback address"
	case ip.IsPrivate():
		return "private address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local address"
	case ip.IsUnspecified():
		return "unspecified address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast address"
	}
	for _, p := range refusedPrefixes {
		if p.Contains(ip) {
			return "reserved address"
		}
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
