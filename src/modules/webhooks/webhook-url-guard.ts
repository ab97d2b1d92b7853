import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * The SSRF guard of contract C5: webhook URLs must be absolute http(s) URLs whose host resolves
 * only to public addresses. Checked at registration and again at every delivery (DNS can change).
 */
const nonPublic = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  nonPublic.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128],
  ['64:ff9b::', 96], // NAT64
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  nonPublic.addSubnet(network, prefix, 'ipv6');
}

// IPv4-mapped IPv6 addresses are judged by the IPv4 rules. (A BlockList rule for ::ffff:0:0/96
// would be wrong: Node matches plain IPv4 addresses against it too, refusing all of IPv4.)
const IPV4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

export function isPublicAddress(address: string): boolean {
  const mapped = IPV4_MAPPED.exec(address);
  if (mapped) return isPublicAddress(mapped[1]!);
  const family = isIP(address);
  if (family === 0) return false;
  return !nonPublic.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export class UnsafeWebhookUrlError extends Error {
  override name = 'UnsafeWebhookUrlError';
}

/** Parses and checks the URL's form; throws UnsafeWebhookUrlError with a user-facing reason. */
export function parseWebhookUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeWebhookUrlError('must be an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UnsafeWebhookUrlError('must use http or https');
  if (url.username || url.password) throw new UnsafeWebhookUrlError('must not carry credentials');
  return url;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Resolves the URL's host and returns its addresses, refusing any host that resolves to a
 * non-public address unless `allowPrivate`. Callers that connect must connect to one of the
 * returned addresses (not resolve again), or a rebinding DNS server could swap the answer.
 */
export async function resolveWebhookHost(url: URL, { allowPrivate }: { allowPrivate: boolean }): Promise<ResolvedAddress[]> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: ResolvedAddress[];
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) as 4 | 6 }];
  } else {
    try {
      addresses = (await dnsLookup(host, { all: true, verbatim: true })) as ResolvedAddress[];
    } catch {
      throw new UnsafeWebhookUrlError(`host '${host}' does not resolve`);
    }
  }
  if (!allowPrivate) {
    const refused = addresses.find((entry) => !isPublicAddress(entry.address));
    if (refused) throw new UnsafeWebhookUrlError(`host '${host}' resolves to a non-public address (${refused.address})`);
  }
  return addresses;
}

/**
 * Whether webhook URLs may point at private addresses: refused in production unless
 * WEBHOOK_ALLOW_PRIVATE_URLS=true, allowed in development and test unless it says false.
 */
export function allowsPrivateWebhookUrls(config: { NODE_ENV: string; WEBHOOK_ALLOW_PRIVATE_URLS?: boolean | undefined }): boolean {
  return config.WEBHOOK_ALLOW_PRIVATE_URLS ?? config.NODE_ENV !== 'production';
}
