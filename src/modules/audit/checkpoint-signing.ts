// The signed bytes of an audit checkpoint (see docs/audit.md), shared by the service that signs and
// by the standalone verifier (src/cli/verify-audit-export.ts), so the two cannot disagree. Only
// node:crypto and an RFC 8785 implementation: an auditor can read it in full.
import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import canonicalize from 'canonicalize';

/** What is signed: the chain's hash at `seq`, for the organization, at a time, by a key. */
export interface CheckpointClaim {
  orgId: string;
  seq: number;
  hash: string;
  /** ISO 8601 with milliseconds and Z. */
  createdAt: string;
  keyId: string;
}

export interface Checkpoint extends CheckpointClaim {
  /** Base64 Ed25519 signature over checkpointBytes(claim). */
  signature: string;
  /** The Merkle tree the checkpoint states (docs/receipts.md): its size is `seq`. */
  treeSize?: number;
  /** Hex root hash of the tree of the first `seq` events; null on checkpoints signed before the tree. */
  rootHash?: string | null;
  /** The C2SP tlog-checkpoint signed note of the tree; null likewise. */
  note?: string | null;
}

/** A public key as GET /v1/audit/keys serves it. */
export interface PublishedKey {
  keyId: string;
  /** SPKI PEM. */
  publicKey: string;
  createdAt: string;
  retiredAt: string | null;
}

/** RFC 8785 bytes of { orgId, seq, hash, createdAt, keyId }: exactly these members, nothing else. */
export function checkpointBytes({ orgId, seq, hash, createdAt, keyId }: CheckpointClaim): Buffer {
  return Buffer.from(canonicalize({ orgId, seq, hash, createdAt, keyId })!, 'utf8');
}

/** A key's id: the first 16 hex digits of the SHA-256 of its public key's SPKI DER. */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

export function signCheckpoint(claim: CheckpointClaim, privateKey: KeyObject): Checkpoint {
  return { ...claim, signature: sign(null, checkpointBytes(claim), privateKey).toString('base64') };
}

/**
 * Why a checkpoint does not verify against the published keys, or null when it does: its key must
 * be known, it must have been signed before that key's retirement, and the signature must hold.
 */
export function checkpointProblem(checkpoint: Checkpoint, keys: readonly PublishedKey[]): string | null {
  const key = keys.find((candidate) => candidate.keyId === checkpoint.keyId);
  if (!key) return `signed by an unknown key ${checkpoint.keyId}`;
  if (key.retiredAt !== null && checkpoint.createdAt > key.retiredAt)
    return `signed by key ${key.keyId} after its retirement at ${key.retiredAt}`;
  let valid = false;
  try {
    valid = verify(null, checkpointBytes(checkpoint), createPublicKey(key.publicKey), Buffer.from(checkpoint.signature, 'base64'));
  } catch {
    valid = false;
  }
  return valid ? null : 'the signature does not verify';
}
