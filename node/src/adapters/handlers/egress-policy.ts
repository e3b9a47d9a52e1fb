/**
 * Where the built-in `http` handler may connect. Tenants name the URL, and
 * the worker's network is not theirs: by default it refuses every address a
 * tenant should not reach through us — loopback (the worker's own /metrics),
 * link-local (169.254.169.254, the cloud metadata service), private ranges,
 * CGNAT (100.64/10, where Alibaba's metadata lives), "this network",
 * multicast, reserved and documentation ranges — and the same IPv4 ranges
 * written inside IPv6 (`::ffff:127.0.0.1`, NAT64 `64:ff9b::/96`, 6to4
 * `2002::/16`, the old `::a.b.c.d`). An operator allow-list
 * (CF_HTTP_HANDLER_ALLOW) re-opens what a deployment needs: CIDRs or single
 * addresses (any port), or `host:port` pairs (that host name or address, that
 * port only).
 *
 * The policy judges addresses after DNS resolution; safe-fetch.ts resolves,
 * asks here for every address, and connects to the one it checked.
 */
import net from "node:net";
import { embeddedIpv4, ipv6Words } from "../../domain/ip-address.js";

const DENIED_V4 = [
  "0.0.0.0/8", // "this network"; 0.0.0.0 reaches the local host
  "10.0.0.0/8",
  "100.64.0.0/10", // CGNAT (100.100.100.200: Alibaba Cloud metadata)
  "127.0.0.0/8",
  "169.254.0.0/16", // link-local (169.254.169.254: AWS, GCP, Azure metadata)
  "172.16.0.0/12",
  "192.0.0.0/24", // IETF protocol assignments (192.0.0.192: Oracle Cloud metadata)
  "192.0.2.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4", // multicast
  "240.0.0.0/4", // reserved, and 255.255.255.255
];
const DENIED_V6 = [
  "::/128",
  "::1/128",
  "100::/64", // discard
  "2001:db8::/32", // documentation
  "fc00::/7", // unique local (fd00:ec2::254: AWS metadata over IPv6)
  "fe80::/10", // link-local
  "fec0::/10", // site-local (deprecated)
  "ff00::/8", // multicast
];

/** A `host:port` the operator allowed: that name (or literal address) at that port. */
interface AllowedPair {
  host: string;
  port: number;
}

export class EgressPolicy {
  private readonly denied = new net.BlockList();
  private readonly allowedRanges = new net.BlockList();
  private readonly allowedPairs: AllowedPair[] = [];

  /** `allowList`: comma-separated CIDRs, addresses and host:port pairs ("" allows nothing extra). */
  constructor(allowList = "") {
    for (const cidr of DENIED_V4) addSubnet(this.denied, cidr);
    for (const cidr of DENIED_V6) addSubnet(this.denied, cidr);
    for (const raw of allowList.split(",")) {
      const entry = raw.trim();
      if (entry !== "") this.allow(entry);
    }
  }

  /** May a request to `hostname:port` connect to `address` (one of its resolved addresses)? */
  permits(hostname: string, port: number, address: string): boolean {
    const host = bareHost(hostname).toLowerCase();
    const ip = normalised(address);
    if (this.allowedPairs.some((p) => p.port === port && (p.host === host || p.host === ip))) {
      return true;
    }
    if (matches(this.allowedRanges, ip)) return true;
    return !matches(this.denied, ip);
  }

  private allow(entry: string): void {
    if (entry.includes("/")) {
      if (!addSubnet(this.allowedRanges, entry)) throw badEntry(entry);
      return;
    }
    if (net.isIP(bareHost(entry)) !== 0) {
      const ip = normalised(bareHost(entry));
      this.allowedRanges.addAddress(ip, net.isIPv6(ip) ? "ipv6" : "ipv4");
      return;
    }
    const pair = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(entry);
    const port = Number(pair?.[2]);
    if (!pair || port < 1 || port > 65535) throw badEntry(entry);
    const host = bareHost(pair[1]!).toLowerCase();
    this.allowedPairs.push({ host: net.isIP(host) ? normalised(host) : host, port });
  }
}

const badEntry = (entry: string) =>
  new Error(
    `CF_HTTP_HANDLER_ALLOW: ${JSON.stringify(entry)} is not a CIDR, an address or host:port`,
  );

function addSubnet(list: net.BlockList, cidr: string): boolean {
  const [address, bits] = cidr.split("/");
  const family = net.isIP(address ?? "");
  const prefix = Number(bits);
  const max = family === 4 ? 32 : 128;
  if (family === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > max) return false;
  list.addSubnet(address!, prefix, family === 4 ? "ipv4" : "ipv6");
  return true;
}

function matches(list: net.BlockList, ip: string): boolean {
  return list.check(ip, net.isIPv6(ip) ? "ipv6" : "ipv4");
}

/** `[::1]` → `::1`. */
const bareHost = (host: string): string =>
  host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;

/**
 * The IPv4 address an IPv6 address stands for, when it embeds one (mapped,
 * compatible, NAT64, 6to4), so the IPv4 rules apply to it; else the address.
 */
export function normalised(address: string): string {
  if (!net.isIPv6(address)) return address;
  const words = ipv6Words(address);
  return (words && embeddedIpv4(words)) ?? address;
}
