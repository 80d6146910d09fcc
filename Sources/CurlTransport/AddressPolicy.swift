import Glibc

/// Decides which IP addresses the client refuses to connect to unless
/// ``TransferRequest/allowPrivateAddresses`` is set, as Apple's CDN refuses private and reserved
/// addresses (`SWCERR00202`).
public enum AddressPolicy {
    /// Whether `address` (a numeric IPv4 or IPv6 address, optionally in brackets or with an IPv6
    /// zone) is loopback, private, link-local, shared (CGNAT), documentation, benchmarking,
    /// multicast, reserved or unspecified, or an IPv4-mapped, NAT64 or 6to4 IPv6 form of one.
    ///
    /// IPv6 outside the global unicast block `2000::/3` always counts as reserved. A string that
    /// is not a numeric address also counts as reserved (refusing is the safe answer).
    /// - Parameter address: The numeric address, e.g. `10.0.0.1` or `fe80::1%eth0`.
    /// - Returns: `true` when the address must be refused without `allowPrivateAddresses`.
    public static func isPrivateOrReserved(_ address: String) -> Bool {
        var text = Substring(address)
        if text.hasPrefix("["), text.hasSuffix("]") {
            text = text.dropFirst().dropLast()
        }
        if let zone = text.firstIndex(of: "%") {
            text = text[..<zone]
        }
        let numeric = String(text)
        var v4 = in_addr()
        if inet_pton(AF_INET, numeric, &v4) == 1 {
            return isPrivateOrReserved(ipv4: withUnsafeBytes(of: v4) { Array($0) })
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, numeric, &v6) == 1 {
            return isPrivateOrReserved(ipv6: withUnsafeBytes(of: v6) { Array($0) })
        }
        return true
    }

    // MARK: - IPv4

    /// Special-purpose IPv4 blocks (IANA registry) that are not globally reachable unicast.
    private static let ipv4Blocks: [(prefix: UInt32, length: UInt32)] = [
        (0x0000_0000, 8),  // 0.0.0.0/8 "this network", includes the unspecified address
        (0x0A00_0000, 8),  // 10.0.0.0/8 private
        (0x6440_0000, 10),  // 100.64.0.0/10 shared address space (CGNAT)
        (0x7F00_0000, 8),  // 127.0.0.0/8 loopback
        (0xA9FE_0000, 16),  // 169.254.0.0/16 link-local
        (0xAC10_0000, 12),  // 172.16.0.0/12 private
        (0xC000_0000, 24),  // 192.0.0.0/24 IETF protocol assignments
        (0xC000_0200, 24),  // 192.0.2.0/24 documentation (TEST-NET-1)
        (0xC058_6300, 24),  // 192.88.99.0/24 6to4 relay anycast (deprecated)
        (0xC0A8_0000, 16),  // 192.168.0.0/16 private
        (0xC612_0000, 15),  // 198.18.0.0/15 benchmarking
        (0xC633_6400, 24),  // 198.51.100.0/24 documentation (TEST-NET-2)
        (0xCB00_7100, 24),  // 203.0.113.0/24 documentation (TEST-NET-3)
        (0xE000_0000, 4),  // 224.0.0.0/4 multicast
        (0xF000_0000, 4),  // 240.0.0.0/4 reserved, includes 255.255.255.255 broadcast
    ]

    private static func isPrivateOrReserved(ipv4 bytes: [UInt8]) -> Bool {
        guard bytes.count == 4 else { return true }
        let value = bytes.reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }
        return ipv4Blocks.contains { block in
            let mask: UInt32 = block.length == 0 ? 0 : ~UInt32(0) << (32 - block.length)
            return value & mask == block.prefix
        }
    }

    // MARK: - IPv6

    private static func isPrivateOrReserved(ipv6 bytes: [UInt8]) -> Bool {
        guard bytes.count == 16 else { return true }
        // ::ffff:a.b.c.d — IPv4-mapped: judge the IPv4 address.
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return isPrivateOrReserved(ipv4: Array(bytes[12..<16]))
        }
        // 64:ff9b::/96 — well-known NAT64 prefix: judge the embedded IPv4 address.
        if bytes[0..<12].elementsEqual([0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0]) {
            return isPrivateOrReserved(ipv4: Array(bytes[12..<16]))
        }
        // Everything outside 2000::/3 (global unicast) is reserved: ::, ::1, ::/96, fc00::/7 (ULA),
        // fe80::/10 (link-local), fec0::/10, ff00::/8 (multicast), 64:ff9b:1::/48 (local NAT64) ...
        if bytes[0] & 0xE0 != 0x20 {
            return true
        }
        // 2001::/23 IETF protocol assignments (Teredo, benchmarking 2001:2::/48, ORCHID ...).
        if bytes[0] == 0x20, bytes[1] == 0x01, bytes[2] & 0xFE == 0x00 {
            return true
        }
        // 2001:db8::/32 documentation.
        if bytes[0..<4].elementsEqual([0x20, 0x01, 0x0D, 0xB8]) {
            return true
        }
        // 3fff::/20 documentation (RFC 9637).
        if bytes[0] == 0x3F, bytes[1] == 0xFF, bytes[2] & 0xF0 == 0x00 {
            return true
        }
        // 2002::/16 6to4: judge the embedded IPv4 address.
        if bytes[0] == 0x20, bytes[1] == 0x02 {
            return isPrivateOrReserved(ipv4: Array(bytes[2..<6]))
        }
        return false
    }
}
