import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The SSRF guard (see docs/webhooks.md): webhook URLs must be absolute http(s) URLs whose host resolves
 * only to public addresses. Checked at registration and again at every delivery (DNS can change).
 *
 * An address is public when ipaddr.js classifies it as plain `unicast`: every special-purpose
 * range it knows (private, loopback, link-local, carrier-grade NAT, documentation, multicast,
 * unique and site-local, 6to4, Teredo, NAT64 including local-use 64:ff9b:1::/48, translated
 * ::ffff:0:0/96, discard, reserved...) is refused. IPv4-mapped addresses (::ffff:a.b.c.d) are
 * judged as the IPv4 address they carry. The deprecated IPv4-compatible form (::a.b.c.d),
 * which ipaddr.js leaves in `unicast`, is refused as well: stacks may route it to IPv4.
 */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

export function isPublicAddress(address: string): boolean {
  if (isIP(address) === 0) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return isPublicAddress(v6.toIPv4Address().toString());
  return v6.range() === 'unicast' && !v6.match(IPV4_COMPATIBLE);
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
