import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

/** Folders already in the one shape; the others follow as issue 19 reaches them. */
const SHAPED = ['audit', 'tasks'];

test('a resource folder has router.ts, schemas.ts and service.ts, and its router talks to services only', () => {
  for (const folder of SHAPED) {
    for (const file of ['router.ts', 'schemas.ts', 'service.ts'])
      assert.ok(existsSync(`routers/${folder}/${file}`), `routers/${folder}/${file}`);
    const router = readFileSync(`routers/${folder}/router.ts`, 'utf8');
    assert.doesNotMatch(router, /services\.(db|engine|feed)\b/, `routers/${folder}/router.ts reaches past its service`);
    assert.doesNotMatch(
      router,
      /db\/repositories|engine\//,
      `routers/${folder}/router.ts imports a repository or the engine`,
    );
    assert.doesNotMatch(router, /z\.object\(/, `routers/${folder}/router.ts defines a schema inline`);
  }
});
