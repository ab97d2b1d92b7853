// Verifies a downloaded audit export without the service: recomputes every hash of docs/audit.md,
// checks that the events link up, and checks signed checkpoints (see docs/audit.md) against the chain
// and the public keys. Deliberately standalone (node:crypto, canonicalize, csv-parse, and the one
// small module that defines a checkpoint's signed bytes), so an auditor can read it in full and
// run it anywhere.
//
//   npm run audit:verify -- export.csv             a bulk export or GET /v1/audit?format=csv
//   npm run audit:verify -- page.json              GET /v1/audit's body, or an array of its events
//   npm run audit:verify -- --partial export.csv   a filtered or paged export (see below)
//   npm run audit:verify -- export.csv --public-key key.pem [--checkpoints checkpoints.json]
//   npm run audit:verify -- export.csv --keys keys.json [--checkpoints checkpoints.json]
//   npm run audit:verify -- --receipt r.json --keys keys.json [--payload payload.json]
//
// Checkpoints come from the export itself (GET /v1/audit?checkpoints=true: CSV rows of type
// audit.checkpoint, or a JSON page's `checkpoints`) and from --checkpoints: the body of GET
// /v1/audit/checkpoints, an array of checkpoints, or of the audit.checkpoint webhooks you
// received. Keys: --public-key (SPKI PEM files, repeatable) or --keys (GET /v1/audit/keys's body,
// which also tells when a key was retired).
//
// A receipt (docs/receipts.md) comes as GET /v1/approvals/:id/receipt's body, an approval view with
// its `receipt`, or a webhook whose data carries one; with --payload, the payload must also be the
// one it approved (same RFC 8785 hash, status approved).
//
// Exit code 0: intact. 1: broken, with the first bad seq named (or the receipt refused). 2: usage
// error or unreadable file.
import { createHash, createPublicKey } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import canonicalize from 'canonicalize';
import { parse } from 'csv-parse';
import { checkpointProblem, keyIdOf, type Checkpoint, type PublishedKey } from '../modules/audit/checkpoint-signing.js';
import { hashPayload, receiptProblem, type SignedReceipt } from '../modules/audit/receipt-signing.js';

const COLUMNS = ['seq', 'createdAt', 'type', 'actor', 'data', 'prevHash', 'hash'];
const GENESIS_HASH = '0'.repeat(64);
const CHECKPOINT_TYPE = 'audit.checkpoint';
/**
 * The service refuses payloads nested deeper than 64 levels (docs/api.md, "Limits and hostile input"),
 * and an event's data holds a payload one level down, so the object hashed ({ seq, type, actor,
 * data, createdAt }) nests at most 66 deep. Anything deeper was not written by the service, and
 * is reported as such rather than handed to the recursive canonicalizer, which would overflow.
 */
const MAX_HASHED_DEPTH = 64 + 2;

interface ExportedEvent {
  seq: number;
  createdAt: string;
  type: string;
  actor: string;
  data: unknown;
  prevHash: string;
  hash: string;
}

/** Whether objects and arrays in `value` nest deeper than `limit` levels; never recurses past it. */
function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (limit === 0) return true;
  return Object.values(value).some((item) => nestsDeeperThan(item, limit - 1));
}

function hashedFields({ seq, type, actor, data, createdAt }: ExportedEvent) {
  return { seq, type, actor, data, createdAt };
}

/** hash = hex(SHA-256(prevHash + JCS({ seq, type, actor, data, createdAt }))), over UTF-8 bytes. */
function recomputeHash(event: ExportedEvent): string {
  return createHash('sha256')
    .update(event.prevHash + canonicalize(hashedFields(event)), 'utf8')
    .digest('hex');
}

/** What an export holds: events in seq order, and the checkpoints it was asked to include. */
type ExportRecord = { kind: 'event'; event: ExportedEvent } | { kind: 'checkpoint'; checkpoint: Checkpoint };

async function readJsonFile(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file} is not JSON: ${(error as Error).message}`);
  }
}

async function* readJson(file: string): AsyncGenerator<ExportRecord> {
  const document = await readJsonFile(file);
  const events = Array.isArray(document) ? document : (document as { events?: unknown } | null)?.events;
  if (!Array.isArray(events)) throw new Error(`${file} holds neither an array of events nor { "events": [...] }`);
  // The page's checkpoints first: the hashes they are held to are then kept as the events go by.
  const checkpoints = (document as { checkpoints?: unknown }).checkpoints;
  if (Array.isArray(checkpoints)) for (const checkpoint of checkpoints as Checkpoint[]) yield { kind: 'checkpoint', checkpoint };
  for (const event of events as ExportedEvent[]) yield { kind: 'event', event };
}

/** Streams the CSV, so an export of millions of rows is checked in constant memory. */
async function* readCsv(file: string): AsyncGenerator<ExportRecord> {
  const records = parse({
    columns: (header: string[]) => {
      if (header.join(',') !== COLUMNS.join(',')) throw new Error(`${file}: the header is not ${COLUMNS.join(',')}`);
      return header;
    },
  });
  createReadStream(file)
    .on('error', (error) => records.destroy(error))
    .pipe(records);
  for await (const record of records as AsyncIterable<Record<string, string>>) {
    let data: unknown;
    try {
      data = JSON.parse(record.data!);
    } catch {
      data = record.data; // not JSON: the hash will not recompute, which names this seq
    }
    if (record.type === CHECKPOINT_TYPE) yield { kind: 'checkpoint', checkpoint: data as Checkpoint };
    else yield { kind: 'event', event: { ...(record as unknown as ExportedEvent), seq: Number(record.seq), data } };
  }
}

type Verdict =
  | { intact: true; count: number; first?: number; last?: number; headHash?: string; checkpoints: number }
  | { intact: false; count: number; seq: number; reason: string };

/**
 * Strict (default): the export is the whole chain, seq 1, 2, 3, ... with the first prevHash 64
 * zeros. Partial: any selection in seq order; every hash is recomputed, and links are checked
 * between consecutive seqs only, so a deleted event is not noticed there: check the full chain.
 */
async function verify(records: AsyncIterable<ExportRecord>, partial: boolean, signed: SignedCheckpoints): Promise<Verdict> {
  let count = 0;
  let first: number | undefined;
  let previous: ExportedEvent | undefined;
  const broken = (seq: number, reason: string): Verdict => ({ intact: false, count, seq, reason });
  for await (const record of records) {
    if (record.kind === 'checkpoint') {
      signed.add(record.checkpoint);
      continue;
    }
    const { event } = record;
    if (!Number.isSafeInteger(event.seq) || event.seq < 1) return broken(previous ? previous.seq + 1 : 1, `invalid seq '${event.seq}'`);
    const expectedSeq = previous ? previous.seq + 1 : 1;
    if (!partial && event.seq !== expectedSeq) return broken(expectedSeq, `seq ${expectedSeq} is missing (next is ${event.seq})`);
    if (previous && event.seq <= previous.seq) return broken(event.seq, `seq ${event.seq} comes after seq ${previous.seq}`);
    const expectedPrevHash = event.seq === 1 ? GENESIS_HASH : previous?.seq === event.seq - 1 ? previous.hash : undefined;
    if (expectedPrevHash !== undefined && event.prevHash !== expectedPrevHash) {
      return broken(event.seq, event.seq === 1 ? 'prevHash of seq 1 is not 64 zeros' : `prevHash is not the hash of seq ${event.seq - 1}`);
    }
    if (nestsDeeperThan(hashedFields(event), MAX_HASHED_DEPTH)) {
      return broken(event.seq, `the event nests deeper than ${MAX_HASHED_DEPTH} levels, which the service never writes`);
    }
    if (recomputeHash(event) !== event.hash) return broken(event.seq, 'hash does not match the event (recomputed)');
    first ??= event.seq;
    previous = event;
    signed.seen(event);
    count++;
  }
  const contradicted = signed.firstContradicted(first, previous?.seq);
  if (contradicted) return broken(contradicted.seq, contradicted.reason);
  return { intact: true, count, first, last: previous?.seq, headHash: previous?.hash, checkpoints: signed.checked };
}

/**
 * The signed checkpoints to hold the chain to: each must verify under the published keys, and the
 * exported chain's hash at its seq must be the one it signed. Only the hashes at checkpointed seqs
 * are kept, so a long export is still checked in constant memory.
 */
class SignedCheckpoints {
  private readonly bySeq = new Map<number, Checkpoint[]>();
  private readonly chainHashes = new Map<number, string>();
  private last: { seq: number; hash: string } | null = null;
  checked = 0;

  constructor(
    private readonly keys: readonly PublishedKey[],
    given: readonly Checkpoint[],
  ) {
    for (const checkpoint of given) this.add(checkpoint);
  }

  get any(): boolean {
    return this.bySeq.size > 0;
  }

  /** A checkpoint of the export comes right after its event, whose hash is then the last one seen. */
  add(checkpoint: Checkpoint): void {
    this.bySeq.set(checkpoint.seq, [...(this.bySeq.get(checkpoint.seq) ?? []), checkpoint]);
    if (this.last?.seq === checkpoint.seq) this.chainHashes.set(checkpoint.seq, this.last.hash);
  }

  seen(event: ExportedEvent): void {
    this.last = { seq: event.seq, hash: event.hash };
    if (this.bySeq.has(event.seq)) this.chainHashes.set(event.seq, event.hash);
  }

  /** The first checkpoint within the exported seqs that the chain or the keys contradict. */
  firstContradicted(first: number | undefined, last: number | undefined): { seq: number; reason: string } | null {
    const inRange = [...this.bySeq.entries()].filter(([seq]) => first !== undefined && last !== undefined && seq >= first && seq <= last);
    for (const [seq, checkpoints] of inRange.sort(([a], [b]) => a - b)) {
      for (const checkpoint of checkpoints) {
        this.checked++;
        const problem = checkpointProblem(checkpoint, this.keys);
        if (problem) return { seq, reason: `the checkpoint at seq ${seq} ${problem}` };
        if (this.chainHashes.get(seq) !== checkpoint.hash) {
          return { seq, reason: `the chain contradicts the checkpoint signed at seq ${seq} by key ${checkpoint.keyId}` };
        }
      }
    }
    return null;
  }
}

const USAGE =
  'Usage: npm run audit:verify -- [--partial] <export.csv | export.json> [--public-key key.pem ... | --keys keys.json] [--checkpoints file.json]\n' +
  '       npm run audit:verify -- --receipt receipt.json [--public-key key.pem ... | --keys keys.json] [--payload payload.json]';

/** The signed receipt in a file: the receipt endpoint's body, an approval view, or a webhook. */
function receiptIn(document: unknown): SignedReceipt {
  const candidates = [
    document,
    (document as { receipt?: unknown })?.receipt,
    (document as { data?: { receipt?: unknown } })?.data?.receipt,
  ];
  const found = candidates.find(
    (candidate): candidate is SignedReceipt =>
      typeof candidate === 'object' && candidate !== null && 'receipt' in candidate && 'signature' in candidate,
  );
  if (!found) throw new Error('--receipt needs { receipt, signature }, an approval with its receipt, or a webhook carrying one');
  return found;
}

/** Checks a receipt file; with a payload, that it approved exactly that payload. */
async function verifyReceiptFile(file: string, keys: PublishedKey[], payloadFile: string | undefined): Promise<number> {
  const { receipt, signature } = receiptIn(await readJsonFile(file));
  const problem =
    receiptProblem(receipt, signature, keys) ??
    (payloadFile === undefined
      ? null
      : receipt.status !== 'approved'
        ? `the approval is ${receipt.status}, not approved`
        : hashPayload(await readJsonFile(payloadFile)) !== receipt.payloadHash
          ? `the payload's hash is not the approved payloadHash ${receipt.payloadHash}`
          : null);
  if (problem) {
    console.log(`REFUSED: receipt of approval ${receipt.approvalId} (seq ${receipt.seq}): ${problem}`);
    return 1;
  }
  const bound = payloadFile === undefined ? '' : ', and it approved this payload';
  console.log(
    `valid: receipt of approval ${receipt.approvalId} revision ${receipt.revision}, ${receipt.status}, seq ${receipt.seq}, key ${receipt.keyId}${bound}`,
  );
  return 0;
}

/** Checkpoints as kept by the organization: GET /v1/audit/checkpoints, an array, or received webhooks. */
function checkpointsIn(document: unknown): Checkpoint[] {
  const list = Array.isArray(document) ? document : (document as { checkpoints?: unknown } | null)?.checkpoints;
  if (!Array.isArray(list)) throw new Error('--checkpoints needs an array, { "checkpoints": [...] } or audit.checkpoint webhooks');
  return list.map((item: { type?: string; data?: Checkpoint } & Checkpoint) =>
    item.type === CHECKPOINT_TYPE && item.data ? item.data : item,
  );
}

async function publishedKeys(pemFiles: string[], keysFile: string | undefined): Promise<PublishedKey[]> {
  const fromPem = await Promise.all(
    pemFiles.map(async (file) => {
      const publicKey = await readFile(file, 'utf8');
      return { keyId: keyIdOf(createPublicKey(publicKey)), publicKey, createdAt: '', retiredAt: null };
    }),
  );
  if (!keysFile) return fromPem;
  const document = await readJsonFile(keysFile);
  const keys = Array.isArray(document) ? document : (document as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new Error(`${keysFile} holds neither an array of keys nor { "keys": [...] }`);
  return [...fromPem, ...(keys as PublishedKey[])];
}

async function main(args: string[]): Promise<number> {
  const options = {
    partial: false,
    publicKeys: [] as string[],
    keys: undefined as string | undefined,
    checkpoints: undefined as string | undefined,
    receipt: undefined as string | undefined,
    payload: undefined as string | undefined,
  };
  const files: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    const value = () => args[++index] ?? '';
    if (arg === '--partial') options.partial = true;
    else if (arg === '--public-key') options.publicKeys.push(value());
    else if (arg === '--keys') options.keys = value();
    else if (arg === '--checkpoints') options.checkpoints = value();
    else if (arg === '--receipt') options.receipt = value();
    else if (arg === '--payload') options.payload = value();
    else files.push(arg);
  }
  if (options.receipt !== undefined) {
    if (files.length > 0 || [...options.publicKeys, options.keys, options.receipt, options.payload].includes('')) {
      console.error(USAGE);
      return 2;
    }
    const keys = await publishedKeys(options.publicKeys, options.keys);
    if (keys.length === 0) {
      console.error(`a receipt needs the public keys that signed it: --public-key or --keys\n${USAGE}`);
      return 2;
    }
    return verifyReceiptFile(options.receipt, keys, options.payload);
  }
  if (files.length !== 1 || files[0]!.startsWith('-') || [...options.publicKeys, options.keys, options.checkpoints].includes('')) {
    console.error(USAGE);
    return 2;
  }
  const file = files[0]!;
  const keys = await publishedKeys(options.publicKeys, options.keys);
  const signed = new SignedCheckpoints(keys, options.checkpoints ? checkpointsIn(await readJsonFile(options.checkpoints)) : []);
  const records = /\.json$/i.test(file) ? readJson(file) : readCsv(file);
  const verdict = await verify(records, options.partial, signed);
  if (signed.any && keys.length === 0) {
    console.error(`checkpoints need the public keys that signed them: --public-key or --keys\n${USAGE}`);
    return 2;
  }
  if (!verdict.intact) {
    console.log(`BROKEN at seq ${verdict.seq}: ${verdict.reason} (${verdict.count} events before it are intact)`);
    return 1;
  }
  const range = verdict.count > 0 ? `, seq ${verdict.first}-${verdict.last}, head hash ${verdict.headHash}` : '';
  const checkpoints = verdict.checkpoints > 0 ? `, ${verdict.checkpoints} signed checkpoints hold` : '';
  console.log(
    `intact: ${verdict.count} events${range}${checkpoints}${options.partial ? ' (partial: links checked between consecutive seqs)' : ''}`,
  );
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(`audit:verify: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 2;
  },
);
