import { createPrivateKey, type KeyObject } from 'node:crypto';

/** The Ed25519 private key of AUDIT_SIGNING_KEY: PKCS#8 PEM, or the base64 of its DER. */
export function parseSigningKey(text: string): KeyObject {
  const trimmed = text.trim();
  const key = trimmed.startsWith('-----BEGIN')
    ? createPrivateKey(trimmed)
    : createPrivateKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'pkcs8' });
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`the audit signing key must be Ed25519, not ${key.asymmetricKeyType}`);
  return key;
}
