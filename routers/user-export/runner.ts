import type { Database } from '../../db/database.ts';
import { listUsers } from '../../db/repositories/users.ts';
import type { Runner } from '../../engine/types.ts';
import { effectiveStatus } from '../users/schemas.ts';
import { startUserExportInput } from './schemas.ts';

export const USER_EXPORT_TYPE = 'user_export';
/** The type the export's file is stored and downloaded with (documented on GET /files/{fileKey}). */
export const USER_EXPORT_CONTENT_TYPE = 'text/csv; charset=utf-8';
const PAGE = 100;
const HEADER = ['id', 'username', 'email', 'status', 'roles', 'created_at'];

/** One CSV cell: quoted when needed, and never read as a formula by a spreadsheet. */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

const csvLine = (cells: string[]) => `${cells.map(csvCell).join(',')}\r\n`;

function fileName(now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '_').slice(0, 15);
  return `users_export_${stamp}.csv`;
}

/**
 * The `user_export` runner: pages through the users (the list's search, if the payload has one), streams
 * them as CSV into the task's artifact, reports progress per page, and stops at a cancel.
 */
export function userExportRunner(db: Database): Runner {
  return async (ctx) => {
    // The payload is what the start procedure validated; parsed again, a task row written by other means fails
    // with the field named instead of exporting something else.
    const { search } = startUserExportInput.parse(ctx.payload ?? {});
    let rows = 0;
    async function* lines() {
      yield csvLine(HEADER);
      for (let offset = 0; ; offset += PAGE) {
        ctx.signal.throwIfAborted();
        const { rows: users, total } = await listUsers(db, {
          offset,
          limit: PAGE,
          search,
        });
        for (const u of users) {
          yield csvLine([
            u.id,
            u.username,
            u.email,
            effectiveStatus(u),
            (u.roles ?? []).map((r) => r.name).join(';'),
            u.created_at,
          ]);
        }
        rows += users.length;
        ctx.progress(total ? Math.min(90, Math.floor((rows * 90) / total)) : 90);
        if (users.length < PAGE) return;
      }
    }
    const fileKey = await ctx.artifact(fileName(new Date()), lines(), USER_EXPORT_CONTENT_TYPE);
    ctx.log.info('users exported', { rows });
    return { file_key: fileKey, rows };
  };
}
