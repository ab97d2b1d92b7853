import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../lib/errors.js';
import { problemType } from './problem.js';

/** Node's limit on a request's header block (`--max-http-header-size`). */
const MAX_HEADER_BYTES = 16 * 1024;

const ANSWERS: Record<string, { status: number; reason: string; code: ErrorCode; detail: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    code: 'headers_too_large',
    detail: `The request's header block exceeds ${MAX_HEADER_BYTES / 1024} KB.`,
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    reason: 'Request Timeout',
    code: 'request_timeout',
    detail: 'The request did not arrive in time.',
  },
};
const MALFORMED = { status: 400, reason: 'Bad Request', code: 'bad_request' as ErrorCode, detail: 'The request is not valid HTTP/1.1.' };

/**
 * Requests Node's HTTP parser refuses never reach Express; without this they are answered with a
 * bare status line. Here they get the same problem+json as everything else, then the connection
 * closes (the parser cannot resume after an error).
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const answer = ANSWERS[error.code ?? ''] ?? MALFORMED;
    const body = JSON.stringify({
      type: problemType(answer.code),
      title: answer.reason,
      status: answer.status,
      detail: answer.detail,
      code: answer.code,
    });
    socket.end(
      `HTTP/1.1 ${answer.status} ${answer.reason}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}
