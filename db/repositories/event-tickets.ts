import type { Knex } from 'knex';
import type { Database } from '../database.ts';

/** Who a ticket was handed to: the stream it opens acts as this session. */
export interface TicketHolder {
  user_id: string;
  session_id: string;
}

export async function insertEventTicket(
  db: Database,
  row: TicketHolder & { ticket_hash: string; expires_at: Date },
): Promise<void> {
  const time = db.dialect.toDbTime;
  await db.knex(db.t.eventTickets).insert({
    ...row,
    created_at: time(new Date()),
    expires_at: time(row.expires_at),
    used_at: null,
  });
}

/**
 * Uses the ticket up: answers its holder once, for a ticket that is unused and not expired; undefined otherwise
 * (and for every later try). The check and the write run under the ticket's lock, which is what keeps a ticket
 * single-use on engines without row locks (ClickHouse, one process); elsewhere the guarded UPDATE decides.
 */
export async function redeemEventTicket(
  db: Database,
  ticketHash: string,
  now: Date,
): Promise<TicketHolder | undefined> {
  const time = db.dialect.toDbTime(now) as Knex.Value;
  return db.withLock(`${db.t.eventTickets}:${ticketHash}`, async () => {
    const row = (await db
      .knex(db.t.eventTickets)
      .where('ticket_hash', ticketHash)
      .whereNull('used_at')
      .where('expires_at', '>', time)
      .first('user_id', 'session_id')) as TicketHolder | undefined;
    if (!row) return undefined;
    const used = await db
      .knex(db.t.eventTickets)
      .where('ticket_hash', ticketHash)
      .whereNull('used_at')
      .update({ used_at: time });
    return used === 1 ? { user_id: row.user_id, session_id: row.session_id } : undefined;
  });
}

/** The credential cleaner of the sessions cleanup (engine/cleanup.ts). */
export async function deleteExpiredEventTickets(db: Database, now: Date): Promise<number> {
  return db
    .knex(db.t.eventTickets)
    .where('expires_at', '<', db.dialect.toDbTime(now) as Knex.Value)
    .del();
}
