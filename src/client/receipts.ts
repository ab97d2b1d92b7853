// What an executor checks before it acts (see docs/receipts.md): that a receipt was signed by the
// service's published key, and that it approves exactly the payload about to be executed. Nothing
// here trusts the API's answer in transit: only the signature and the hash.
import type { PublishedKey } from '../modules/audit/checkpoint-signing.js';
import { hashPayload, receiptProblem, type Receipt } from '../modules/audit/receipt-signing.js';

export type { PublishedKey };

/** Why a receipt was refused: `reason` says what did not hold. */
export class ReceiptError extends Error {
  override name = 'ReceiptError';
  constructor(readonly reason: string) {
    super(`receipt refused: ${reason}`);
  }
}

/** The keys as GET /v1/audit/keys serves them, or their array. */
export type ReceiptKeysInput = readonly PublishedKey[] | { keys: readonly PublishedKey[] };

function keyList(keys: ReceiptKeysInput): readonly PublishedKey[] {
  return Array.isArray(keys) ? keys : (keys as { keys: readonly PublishedKey[] }).keys;
}

/** Whether the receipt is validly signed by one of these keys (a retired key only for decisions before its retirement). */
export function verifyReceipt(receipt: Receipt, signature: string, keys: ReceiptKeysInput): boolean {
  return receiptProblem(receipt, signature, keyList(keys)) === null;
}

/**
 * Throws a ReceiptError unless the receipt is validly signed, says `approved`, and binds exactly
 * this payload: the SHA-256 of its RFC 8785 bytes equals `payloadHash`. Key order and
 * whitespace do not matter; any changed value does. Returns the receipt.
 */
export function assertApproved(payload: unknown, receipt: Receipt, signature: string, keys: ReceiptKeysInput): Receipt {
  const problem = receiptProblem(receipt, signature, keyList(keys));
  if (problem) throw new ReceiptError(problem);
  if (receipt.status !== 'approved') throw new ReceiptError(`the approval is ${receipt.status}, not approved`);
  const hash = hashPayload(payload);
  if (hash !== receipt.payloadHash)
    throw new ReceiptError(`the payload's hash ${hash} is not the approved payloadHash ${receipt.payloadHash}`);
  return receipt;
}
