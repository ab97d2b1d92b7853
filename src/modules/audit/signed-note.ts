// Checkpoints as C2SP tlog-checkpoint signed notes (see docs/receipts.md), which transparency-log
// tools and witnesses read: the origin, the tree size, the base64 root hash, a blank line, then one
// signature line "— <key name> base64(key id || Ed25519 signature)" over the text above it.
import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

const ED25519_SIGNATURE_TYPE = 0x01;

/** The 32 raw bytes of an Ed25519 public key (the end of its SPKI DER). */
function rawPublicKey(publicKey: KeyObject): Buffer {
  return publicKey.export({ type: 'spki', format: 'der' }).subarray(-32);
}

/** The C2SP key id: SHA-256(key name || 0x0A || 0x01 || 32-byte public key)[:4]. */
export function noteKeyId(name: string, publicKey: KeyObject): Buffer {
  return createHash('sha256')
    .update(`${name}\n`, 'utf8')
    .update(Buffer.of(ED25519_SIGNATURE_TYPE))
    .update(rawPublicKey(publicKey))
    .digest()
    .subarray(0, 4);
}

/** The verifier key string of C2SP signed notes: `<name>+<hex key id>+<base64(0x01 || public key)>`. */
export function verifierKey(name: string, publicKey: KeyObject): string {
  const encoded = Buffer.concat([Buffer.of(ED25519_SIGNATURE_TYPE), rawPublicKey(publicKey)]).toString('base64');
  return `${name}+${noteKeyId(name, publicKey).toString('hex')}+${encoded}`;
}

/** The checkpoint text: origin, size and base64 root, each on its line. The origin is also the key name. */
export function checkpointText(origin: string, treeSize: number, rootHash: Buffer): string {
  return `${origin}\n${treeSize}\n${rootHash.toString('base64')}\n`;
}

export function signNote(text: string, name: string, privateKey: KeyObject): string {
  const signature = sign(null, Buffer.from(text, 'utf8'), privateKey);
  const keyId = noteKeyId(name, createPublicKey(privateKey));
  return `${text}\n— ${name} ${Buffer.concat([keyId, signature]).toString('base64')}\n`;
}

/** A verified checkpoint note's contents, or why it does not verify against this key. */
export function openCheckpointNote(
  note: string,
  publicKeyPem: string,
): { origin: string; treeSize: number; rootHash: string } | { problem: string } {
  const split = note.indexOf('\n\n');
  if (split < 0) return { problem: 'no blank line between the text and its signatures' };
  const text = note.slice(0, split + 1);
  const [origin, size, root] = text.split('\n');
  const publicKey = createPublicKey(publicKeyPem);
  const expectedId = noteKeyId(origin ?? '', publicKey);
  for (const line of note.slice(split + 2).split('\n')) {
    const match = /^— (\S+) (\S+)$/.exec(line);
    if (!match || match[1] !== origin) continue;
    const blob = Buffer.from(match[2]!, 'base64');
    if (blob.length !== 68 || !blob.subarray(0, 4).equals(expectedId)) continue;
    if (!verify(null, Buffer.from(text, 'utf8'), publicKey, blob.subarray(4))) return { problem: 'the note signature does not verify' };
    if (!/^\d+$/.test(size ?? '') || root === undefined) return { problem: 'not a tlog-checkpoint' };
    return { origin: origin!, treeSize: Number(size), rootHash: Buffer.from(root, 'base64').toString('hex') };
  }
  return { problem: 'no signature by this key' };
}
