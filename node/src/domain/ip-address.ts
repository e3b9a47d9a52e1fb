/**
 * IP address text, parsed by hand (the domain imports no node:net): the
 * eight words of an IPv6 address, the IPv4 address some IPv6 forms carry, and
 * the key a per-client limit counts under.
 */

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

export const isIpv4 = (text: string): boolean =>
  IPV4.test(text) && text.split(".").every((part) => Number(part) <= 255);

/** The eight 16-bit words of an IPv6 address (a trailing dotted IPv4 part included), or null. */
export function ipv6Words(address: string): number[] | null {
  let text = address.split("%")[0]!; // a zone id says nothing about the range
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    const hi = ((a << 8) | b).toString(16);
    const lo = ((c << 8) | d).toString(16);
    text = `${text.slice(0, dotted.index)}${hi}:${lo}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const part = (s: string | undefined) => (s ? s.split(":") : []);
  const left = part(halves[0]);
  const right = part(halves[1]);
  const fill = halves.length === 2 ? 8 - left.length - right.length : 0;
  if (fill < 0 || (halves.length === 2 && fill === 0 && left.length + right.length === 8)) {
    return null;
  }
  const words = [...left, ...Array<string>(fill).fill("0"), ...right];
  if (words.length !== 8 || !words.every((w) => /^[0-9a-fA-F]{1,4}$/.test(w))) return null;
  return words.map((w) => Number.parseInt(w, 16));
}

/**
 * The IPv4 address an IPv6 address stands for — mapped (`::ffff:a.b.c.d`),
 * compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`), 6to4 (`2002::/16`) — or null.
 */
export function embeddedIpv4(words: readonly number[]): string | null {
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zero = (from: number, to: number) => words.slice(from, to).every((w) => w === 0);
  const [w0, w1, w2, , , w5, w6, w7] = words as [number, ...number[]];
  if (zero(0, 5) && w5 === 0xffff) return v4(w6!, w7!);
  if (zero(0, 6) && (w6 !== 0 || w7! > 1)) return v4(w6!, w7!); // not :: or ::1
  if (w0 === 0x64 && w1 === 0xff9b && zero(2, 6)) return v4(w6!, w7!);
  if (w0 === 0x2002) return v4(w1!, w2!);
  return null;
}

/**
 * Whom a per-client limit counts: an IPv4 address (also when written as an
 * IPv4-mapped IPv6 address), or an IPv6 address's /64 — one host usually
 * holds a whole /64, so counting single IPv6 addresses would count nothing.
 */
export function clientKeyOf(address: string): string {
  if (isIpv4(address)) return address;
  const words = ipv6Words(address);
  if (!words) return address;
  const mapped = words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff;
  if (mapped) return embeddedIpv4(words)!;
  return `${words
    .slice(0, 4)
    .map((w) => w.toString(16))
    .join(":")}::/64`;
}
