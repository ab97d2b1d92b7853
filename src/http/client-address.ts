import type { Request } from 'express';
import ipaddr from 'ipaddr.js';

/**
 * The client a per-address limit counts: Express's `req.ip`, which follows x-forwarded-for only as
 * far as the `trust proxy` setting allows (TRUST_PROXY). An IPv6 client is its /64, the block a
 * single subscriber usually holds, so that walking through its own addresses gains it nothing; an
 * IPv4 address mapped into IPv6 is the IPv4 address.
 */
export function clientAddress(req: Request): string {
  const address = req.ip ?? req.socket.remoteAddress ?? '';
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const [a, b, c, d] = (parsed as ipaddr.IPv6).parts;
  return `${new ipaddr.IPv6([a!, b!, c!, d!, 0, 0, 0, 0]).toString()}/64`;
}
