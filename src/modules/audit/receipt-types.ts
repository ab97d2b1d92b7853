// The receipt's types, as the API's schemas infer them. A module of types alone, so that the client
// package writes its declarations out as plain types (packages/client/build.ts): a consumer who
// checks receipts needs no zod.
import type { z } from 'zod';
import type { receiptSchema, signedReceiptSchema } from '../approvals/approval-schemas.js';

/** The signed object: the settlement, its organization, the audit event that recorded it, and the key. */
export type Receipt = z.output<typeof receiptSchema>;

/** A receipt with its base64 Ed25519 signature over the RFC 8785 bytes of the receipt: what the API serves. */
export type SignedReceipt = z.output<typeof signedReceiptSchema>;
