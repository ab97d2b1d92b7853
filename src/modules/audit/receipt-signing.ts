// The signed bytes of a decision receipt (see docs/receipts.md), shared by the service that signs,
// the client that checks before executing and the standalone verifier, so none can disagree with
// another. Only node:crypto and an RFC 8785 implementation, as for checkpoints.
import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { PublishedKey } from './checkpoint-signing.js';
import type { Receipt, SignedReceipt } from './receipt-types.js';

export type { Receipt, SignedReceipt };

/** What a settlement states from the approval alone, before the append gives it its seq. */
export type ReceiptFacts = Omit<Receipt, 'orgId' | 'seq' | 'keyId'>;

/** Every member, in one place: the bytes signed are exactly these, whatever else an object carries. */
function claimOf(receipt: Receipt): Receipt {
  const { orgId, approvalId, revision, status, action, payloadHash, decidedBy, decidedAt, policyKey, policyVersion, seq, keyId } = receipt;
  return { orgId, approvalId, revision, status, action, payloadHash, decidedBy, decidedAt, policyKey, policyVersion, seq, keyId };
}

/** Signs a receipt with the current key (which it names): what the service holds once its key is published. */
export type ReceiptSigner = (receipt: Omit<Receipt, 'keyId'>) => SignedReceipt;

/** Where receipts get their signer: the audit checkpoints' key, published before it signs. */
export interface ReceiptKeys {
  receiptSigner(): Promise<ReceiptSigner | null>;
}

/** RFC 8785 bytes of the receipt's twelve members. */
export function receiptBytes(receipt: Receipt): Buffer {
  return Buffer.from(canonicalize(claimOf(receipt))!, 'utf8');
}

export function signReceipt(receipt: Receipt, privateKey: KeyObject): SignedReceipt {
  const claim = claimOf(receipt);
  return { receipt: claim, signature: sign(null, receiptBytes(claim), privateKey).toString('base64') };
}

/**
 * Why a receipt does not verify against the published keys, or null when it does: its key must be
 * known, a retired key must have signed it before its retirement (a decision later than that is
 * refused), and the signature must hold over exactly these members.
 */
export function receiptProblem(receipt: Receipt, signature: string, keys: readonly PublishedKey[]): string | null {
  if (typeof receipt !== 'object' || receipt === null || typeof signature !== 'string') return 'not a receipt and its signature';
  const key = keys.find((candidate) => candidate.keyId === receipt.keyId);
  if (!key) return `signed by an unknown key ${String(receipt.keyId)}`;
  if (key.retiredAt !== null && receipt.decidedAt !== null && receipt.decidedAt > key.retiredAt)
    return `signed by key ${key.keyId}, retired at ${key.retiredAt}, for a decision made after that`;
  try {
    if (verify(null, receiptBytes(receipt), createPublicKey(key.publicKey), Buffer.from(signature, 'base64'))) return null;
  } catch {
    // A malformed key or signature is a signature that does not verify.
  }
  return 'the signature does not verify';
}

/** Hex SHA-256 of the RFC 8785 bytes of a payload: the payloadHash a receipt binds. */
export function hashPayload(payload: unknown): string {
  const text = canonicalize(payload);
  if (text === undefined) throw new TypeError('the payload has no JSON representation');
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * A webhook body as delivered: a settling event is committed with its receipt's facts, before
 * the append gives it its seq, and each attempt signs them with the event's seq. Ed25519 is
 * deterministic, so every attempt sends the same bytes while the key stays the same. Other bodies
 * are passed through untouched; with signing off the receipt is null.
 */
export function sealWebhookReceipt(rawBody: string, orgId: string, seq: number | null, signer: ReceiptSigner | null): string {
  // jsonb's text form: a receipt still to sign is an object; a null one needs nothing.
  if (seq === null || !rawBody.includes('"receipt": {')) return rawBody;
  const body = JSON.parse(rawBody) as { data?: { receipt?: (ReceiptFacts & { signature?: never }) | SignedReceipt | null } };
  const facts = body.data?.receipt;
  if (!facts || 'signature' in facts) return rawBody;
  body.data!.receipt = signer ? signer({ ...facts, orgId, seq }) : null;
  return JSON.stringify(body);
}
