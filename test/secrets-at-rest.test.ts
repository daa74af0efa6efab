import assert from 'node:assert/strict';
import { createSecretKey } from 'node:crypto';
import { statSync } from 'node:fs';
import { describe, test } from 'node:test';
import { jwtVerify } from 'jose';
import type { Database } from '../db/database.ts';
import { isSealed } from '../lib/secret-box.ts';
import { lanes, openTestDatabase, startConsole, testConfig, type Lane } from './support/harness.ts';

// Shared databases seal only with a configured key; SQLite generates console.key beside its file.
const keyFor = (lane: Lane) => (lane.name === 'sqlite' ? {} : { global: { encrypt_key: 'k'.repeat(32) } });

const verifies = async (token: string, secret: string) =>
  jwtVerify(token, createSecretKey(Buffer.from(secret, 'utf8')), { algorithms: ['HS256'] }).then(
    () => true,
    () => false,
  );

async function storedSecrets(t: { c: { db: Database } }) {
  const rows = (await t.c.db.knex(t.c.db.t.secrets).select('name', 'value')) as { name: string; value: string }[];
  return new Map(rows.map((r) => [r.name, r.value]));
}

for (const lane of lanes()) {
  describe(`secrets at rest [${lane.name}]`, () => {
    test('generated secrets are stored sealed: the database alone cannot sign a token', async () => {
      const t = await startConsole(lane, keyFor(lane));
      try {
        const token = await t.login();
        const stored = await storedSecrets(t);
        assert.deepEqual([...stored.keys()].sort(), ['audit_signing_key', 'file_signature_key', 'jwt_secret']);
        for (const [name, value] of stored) assert.ok(isSealed(value), `${name} is sealed`);
        assert.equal(await verifies(token, stored.get('jwt_secret')!), false, 'the stored value is not the key');
        assert.equal((await t.request('GET', '/api/auth/me', { token })).status, 200);
      } finally {
        await t.close();
      }
    });

    test('plain secrets an earlier version stored are sealed on start and keep working', async () => {
      const database = lane.database();
      const LEGACY = 'legacy-jwt-secret-stored-in-plain-text';
      const db = openTestDatabase(database);
      try {
        await db.migrate();
        const now = db.dialect.toDbTime(new Date());
        await db.knex(db.t.secrets).insert([
          { name: 'jwt_secret', value: LEGACY, created_at: now },
          { name: 'file_signature_key', value: 'legacy-file-signature-key', created_at: now },
        ]);
      } finally {
        await db.close();
      }
      const t = await startConsole(lane, { ...keyFor(lane), database }, {}, { keepTables: true });
      try {
        const token = await t.login();
        assert.ok(await verifies(token, LEGACY), 'tokens are still signed with the stored secret');
        for (const [name, value] of await storedSecrets(t)) assert.ok(isSealed(value), `${name} is sealed`);
      } finally {
        await t.close();
      }
      // Started again on the sealed rows, it reads the same secret back.
      const again = await startConsole(lane, { ...keyFor(lane), database });
      try {
        assert.ok(await verifies(await again.login(), LEGACY));
      } finally {
        await again.close();
      }
    });

    if (lane.name === 'sqlite')
      test('the database file and its -wal and -shm files are private whatever the umask', async () => {
        const previous = process.umask(0);
        const config = testConfig(lane);
        try {
          const t = await startConsole(lane, { database: config.database });
          try {
            await t.login();
            const path = t.database.path as string;
            for (const file of [path, `${path}-wal`, `${path}-shm`])
              assert.equal((statSync(file).mode & 0o777).toString(8), '600', file);
          } finally {
            await t.close();
          }
        } finally {
          process.umask(previous);
        }
      });
  });
}
