import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, unlink } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Database } from '../db/database.ts';
import { deleteFileRows, findFile, insertFile, type FileRow } from '../db/repositories/files.ts';
import { NotFoundError } from '../lib/errors.ts';

export type ArtifactData = Buffer | string | Readable | AsyncIterable<Buffer | string>;

/** Task artifacts: bytes under `<server.file_upload_path>/artifacts/<YYYY-MM>/<key>`, metadata in the files table. */
export class ArtifactStore {
  private readonly root: string;

  constructor(
    private readonly db: Database,
    fileUploadPath: string,
  ) {
    this.root = resolve(fileUploadPath);
  }

  async save(f: {
    taskId: string;
    ownerId: string | null;
    name: string;
    contentType: string;
    data: ArtifactData;
  }): Promise<FileRow> {
    const key = randomBytes(18).toString('base64url');
    const now = new Date();
    const relative = join('artifacts', now.toISOString().slice(0, 7), key);
    const path = this.pathOf(relative);
    await mkdir(dirname(path), { recursive: true });
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        done(null, chunk);
      },
    });
    const source =
      typeof f.data === 'string' || Buffer.isBuffer(f.data)
        ? Readable.from([Buffer.from(f.data)])
        : Readable.from(f.data);
    try {
      await pipeline(source, count, createWriteStream(path));
    } catch (error) {
      await unlink(path).catch(() => {});
      throw error;
    }
    const row: FileRow = {
      key,
      task_id: f.taskId,
      owner_id: f.ownerId,
      name: f.name.slice(0, 255),
      content_type: f.contentType,
      size,
      path: relative,
      created_at: now.toISOString(),
    };
    await insertFile(this.db, row);
    return row;
  }

  find(key: string): Promise<FileRow | undefined> {
    return findFile(this.db, key);
  }

  /** The file's content, opened before any answer is sent: a row whose file is gone is "not found", not a broken download. */
  async open(file: FileRow): Promise<Readable> {
    const stream = createReadStream(this.pathOf(file.path));
    try {
      await new Promise((resolve, reject) => {
        stream.once('open', resolve);
        stream.once('error', reject);
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new NotFoundError('file.not_found');
      throw error;
    }
    return stream;
  }

  async remove(files: FileRow[]): Promise<void> {
    for (const f of files) await unlink(this.pathOf(f.path)).catch(() => {});
    await deleteFileRows(
      this.db,
      files.map((f) => f.key),
    );
  }

  /** Stored paths are relative to the upload folder and never leave it. */
  private pathOf(relative: string): string {
    const path = resolve(this.root, relative);
    if (!path.startsWith(this.root + sep)) throw new Error('file path outside the upload folder');
    return path;
  }
}
