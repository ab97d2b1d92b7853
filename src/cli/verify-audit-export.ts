// Verifies a downloaded audit export without the service: recomputes every hash of contract C6
// and checks that the events link up. Deliberately standalone (node:crypto, canonicalize,
// csv-parse), so an auditor can read it in full and run it anywhere.
//
//   npm run audit:verify -- export.csv             a bulk export or GET /v1/audit?format=csv
//   npm run audit:verify -- page.json              GET /v1/audit's body, or an array of its events
//   npm run audit:verify -- --partial export.csv   a filtered or paged export (see below)
//
// Exit code 0: intact. 1: broken, with the first bad seq named. 2: usage error or unreadable file.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import canonicalize from 'canonicalize';
import { parse } from 'csv-parse';

const COLUMNS = ['seq', 'createdAt', 'type', 'actor', 'data', 'prevHash', 'hash'];
const GENESIS_HASH = '0'.repeat(64);
/**
 * The service refuses payloads nested deeper than 64 levels (README, "Limits and hostile input"),
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

async function* readJson(file: string): AsyncGenerator<ExportedEvent> {
  let document: unknown;
  try {
    document = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file} is not JSON: ${(error as Error).message}`);
  }
  const events = Array.isArray(document) ? document : (document as { events?: unknown } | null)?.events;
  if (!Array.isArray(events)) throw new Error(`${file} holds neither an array of events nor { "events": [...] }`);
  yield* events as ExportedEvent[];
}

/** Streams the CSV, so an export of millions of rows is checked in constant memory. */
async function* readCsv(file: string): AsyncGenerator<ExportedEvent> {
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
    yield { ...(record as unknown as ExportedEvent), seq: Number(record.seq), data };
  }
}

type Verdict =
  | { intact: true; count: number; first?: number; last?: number; headHash?: string }
  | { intact: false; count: number; seq: number; reason: string };

/**
 * Strict (default): the export is the whole chain, seq 1, 2, 3, ... with the first prevHash 64
 * zeros. Partial: any selection in seq order; every hash is recomputed, and links are checked
 * between consecutive seqs only, so a deleted event is not noticed there: check the full chain.
 */
async function verify(events: AsyncIterable<ExportedEvent>, partial: boolean): Promise<Verdict> {
  let count = 0;
  let first: number | undefined;
  let previous: ExportedEvent | undefined;
  const broken = (seq: number, reason: string): Verdict => ({ intact: false, count, seq, reason });
  for await (const event of events) {
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
    count++;
  }
  return { intact: true, count, first, last: previous?.seq, headHash: previous?.hash };
}

async function main(args: string[]): Promise<number> {
  const partial = args.includes('--partial');
  const files = args.filter((arg) => arg !== '--partial');
  if (files.length !== 1 || files[0]!.startsWith('-')) {
    console.error('Usage: npm run audit:verify -- [--partial] <export.csv | export.json>');
    return 2;
  }
  const file = files[0]!;
  const events = /\.json$/i.test(file) ? readJson(file) : readCsv(file);
  const verdict = await verify(events, partial);
  if (!verdict.intact) {
    console.log(`BROKEN at seq ${verdict.seq}: ${verdict.reason} (${verdict.count} events before it are intact)`);
    return 1;
  }
  const range = verdict.count > 0 ? `, seq ${verdict.first}-${verdict.last}, head hash ${verdict.headHash}` : '';
  console.log(`intact: ${verdict.count} events${range}${partial ? ' (partial: links checked between consecutive seqs)' : ''}`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(`audit:verify: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 2;
  },
);
