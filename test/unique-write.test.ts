import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { findRoleById, insertRole, roleLockKey, roleNameTaken } from '../db/repositories/roles.ts';
import { writeUnique } from '../db/unique-write.ts';
import { BadRequestError } from '../lib/errors.ts';
import { captureLogs, lanes, startConsole, type TestConsole } from './support/harness.ts';

for (const lane of lanes()) {
  describe(`unique writes and transactions [${lane.name}]`, () => {
    let t: TestConsole;
    const { logger, lines } = captureLogs('warn');
    before(async () => {
      t = await startConsole(lane, {}, { logger });
    });
    after(() => t.close());

    const nameFree = (name: string) => async () => {
      if (await roleNameTaken(t.c.db, name, null)) throw new BadRequestError('role.name_taken');
    };

    test('writes of one value at once: one wins, the others meet the check', async () => {
      const { db } = t.c;
      const name = `unique-${randomUUID().slice(0, 8)}`;
      const results = await Promise.allSettled(
        [0, 1, 2].map(() =>
          writeUnique(db, {
            keys: roleLockKey(name, null),
            check: nameFree(name),
            write: () => insertRole(db, randomUUID(), { name, description: '', permissions: [] }),
          }),
        ),
      );
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      for (const r of results.filter((r) => r.status === 'rejected'))
        assert.equal((r.reason as BadRequestError).key, 'role.name_taken');
    });

    test("a unique index's refusal (another node checked at the same moment) is answered by the check", async () => {
      const { db } = t.c;
      const name = `raced-${randomUUID().slice(0, 8)}`;
      await insertRole(db, randomUUID(), { name, description: '', permissions: [] });
      // The refusal needs a unique index; ClickHouse has none and runs as one process, where the lock and the
      // check decide (the test above).
      if (db.dialect.name === 'clickhouse') return;
      let checks = 0;
      // The first check passes as the other node's did, before its row was written.
      const check = async () => {
        if (checks++ > 0) await nameFree(name)();
      };
      await assert.rejects(
        writeUnique(db, {
          keys: roleLockKey(name, null),
          check,
          write: () => insertRole(db, randomUUID(), { name, description: '', permissions: [] }),
        }),
        (error: Error) => error instanceof BadRequestError && error.key === 'role.name_taken',
      );
      assert.equal(checks, 2);
      // An explicit answer replaces the check.
      assert.equal(
        await writeUnique(db, {
          keys: roleLockKey(name, null),
          write: () => insertRole(db, randomUUID(), { name, description: '', permissions: [] }).then(() => 'written'),
          taken: async () => 'taken',
        }),
        'taken',
      );
    });

    test('a failed transaction undoes its writes where the engine has transactions; ClickHouse keeps them', async () => {
      const { db } = t.c;
      const id = randomUUID();
      await insertRole(db, id, { name: `trx-${id.slice(0, 8)}`, description: 'before', permissions: [] });
      await assert.rejects(
        db.dialect.transaction(db.knex, async (trx) => {
          await trx(db.t.roles).where('id', id).update({ description: 'changed' });
          throw new Error('half-way');
        }),
        /half-way/,
      );
      const kept = (await findRoleById(db, id))!.description;
      assert.equal(kept, db.dialect.name === 'clickhouse' ? 'changed' : 'before');
      // Nothing pretends to roll back on ClickHouse: no ROLLBACK was sent, so none was warned about.
      assert.deepEqual(
        lines.filter((l) => JSON.stringify(l).includes('ROLLBACK')),
        [],
      );
    });
  });
}
