import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FileRow } from '../../db/repositories/files.ts';
import type { ArtifactStore } from '../../engine/artifacts.ts';
import { NotFoundError, UnauthorizedError } from '../../lib/errors.ts';
import type { Caller } from '../common/context.ts';

export const SIGNED_URL_TTL_MS = 10 * 60_000;

export interface SignedUrl {
  url: string;
  expires_at: string;
}

/**
 * Downloadable files (task artifacts). With a token, the task's creator or an administrator may fetch one;
 * anyone else gets 404 as for a missing file. A signed URL works without a token for ten minutes (links a
 * browser opens); its signature is an HMAC of key and expiry with a secret every node shares.
 */
export class FileService {
  constructor(
    private readonly artifacts: ArtifactStore,
    private readonly secret: string,
    private readonly rootUrl: string,
  ) {}

  async forCaller(caller: Caller, key: string): Promise<FileRow> {
    const file = await this.artifacts.find(key);
    if (!file || (!caller.isAdmin && file.owner_id !== caller.id)) throw new NotFoundError('file.not_found');
    return file;
  }

  async forSignature(key: string, expires: string, signature: string, now = Date.now()): Promise<FileRow> {
    const expiresAt = Number(expires) * 1000;
    if (!/^\d{1,12}$/.test(expires) || expiresAt < now || !this.verify(key, expires, signature))
      throw new UnauthorizedError('file.bad_signature');
    const file = await this.artifacts.find(key);
    if (!file) throw new NotFoundError('file.not_found');
    return file;
  }

  sign(file: FileRow, now = Date.now()): SignedUrl {
    const expires = String(Math.floor((now + SIGNED_URL_TTL_MS) / 1000));
    const query = new URLSearchParams({ expires, signature: this.mac(file.key, expires) });
    return {
      url: `${this.rootUrl.replace(/\/$/, '')}/api/files/${encodeURIComponent(file.key)}?${query}`,
      expires_at: new Date(Number(expires) * 1000).toISOString(),
    };
  }

  open(file: FileRow): Promise<Readable> {
    return this.artifacts.open(file);
  }

  private mac(key: string, expires: string): string {
    return createHmac('sha256', this.secret).update(`${key}:${expires}`).digest('hex');
  }

  private verify(key: string, expires: string, signature: string): boolean {
    const expected = Buffer.from(this.mac(key, expires), 'hex');
    const given = /^[0-9a-f]{64}$/i.test(signature) ? Buffer.from(signature, 'hex') : Buffer.alloc(0);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
