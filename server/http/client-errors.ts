import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { BadRequestError, HeadersTooLargeError, RequestTimeoutError, type AppError } from '../../lib/errors.ts';

function refusalOf(error: NodeJS.ErrnoException): AppError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new RequestTimeoutError('error.read_timeout');
    case 'HPE_HEADER_OVERFLOW':
      return new HeadersTooLargeError('error.headers_too_large');
    default:
      return new BadRequestError('error.bad_request');
  }
}

/**
 * Fastify's `clientErrorHandler`: answers in the envelope a request Node refused before fastify saw it
 * (headers over Node's size limit, a request not received within `server.read_timeout`, bytes that are not
 * HTTP), then closes the connection. Fastify's default answers in a shape of its own. No headers were read,
 * so the message is in English.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const refusal = refusalOf(error);
  const body = JSON.stringify({ code: refusal.code, err: refusal.localized('en') });
  if (socket.writable)
    socket.write(
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  socket.destroy(error);
}
