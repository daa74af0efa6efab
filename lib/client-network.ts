import { isIPv6 } from 'node:net';

/**
 * The network a client address stands for when requests are counted: an IPv4 address itself, an IPv6 address
 * its /64. One IPv6 host is usually handed a whole /64 and can pick a new address in it for every request, so
 * counting single IPv6 addresses would let it step around any limit. An IPv4-mapped IPv6 address
 * (`::ffff:192.0.2.1`, what a dual-stack socket reports) is its IPv4 address.
 */
export function clientNetwork(ip: string): string {
  const zoneless = ip.split('%', 1)[0]!;
  if (!isIPv6(zoneless)) return ip;
  const groups = expandIPv6(zoneless);
  if (groups.slice(0, 5).every((g) => g === '0') && groups[5] === 'ffff') {
    const [high, low] = [Number.parseInt(groups[6]!, 16), Number.parseInt(groups[7]!, 16)];
    return [high >> 8, high & 255, low >> 8, low & 255].join('.');
  }
  return `${groups.slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, lower case, without leading zeros; an embedded IPv4 tail becomes two. */
function expandIPv6(ip: string): string[] {
  const [head, tail] = ip.toLowerCase().split('::') as [string, string | undefined];
  const parts = (s: string | undefined) => (s ? s.split(':').flatMap(ipv4AsGroups) : []);
  const left = parts(head);
  const right = parts(tail);
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => Number.parseInt(g, 16).toString(16));
}

function ipv4AsGroups(part: string): string[] {
  if (!part.includes('.')) return [part];
  const [a, b, c, d] = part.split('.').map(Number) as [number, number, number, number];
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
}
