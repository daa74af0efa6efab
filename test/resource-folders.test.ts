import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

/** Every folder under routers/ that defines procedures; helper folders (common, mail, task-events) have no router.ts. */
const RESOURCES = readdirSync('routers', { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(`routers/${entry.name}/router.ts`))
  .map((entry) => entry.name);

test('the resource folders are found on disk, not listed by hand', () => {
  for (const folder of ['audit', 'auth', 'permissions', 'settings', 'tasks', 'users'])
    assert.ok(RESOURCES.includes(folder), folder);
  assert.ok(!RESOURCES.includes('common'));
});

test('a resource folder has router.ts, schemas.ts and service.ts, and its router talks to services only', () => {
  for (const folder of RESOURCES) {
    for (const file of ['router.ts', 'schemas.ts', 'service.ts'])
      assert.ok(existsSync(`routers/${folder}/${file}`), `routers/${folder}/${file}`);
    const router = readFileSync(`routers/${folder}/router.ts`, 'utf8');
    assert.doesNotMatch(router, /services\.(db|engine|feed)\b/, `routers/${folder}/router.ts reaches past its service`);
    assert.doesNotMatch(
      router,
      /db\/repositories|engine\//,
      `routers/${folder}/router.ts imports a repository or the engine`,
    );
    assert.doesNotMatch(
      router,
      /from ['"]\.\.\/[\w-]+\/router\.ts['"]/,
      `routers/${folder}/router.ts imports a router`,
    );
    assert.doesNotMatch(router, /from ['"]zod['"]/, `routers/${folder}/router.ts imports zod`);
    assert.doesNotMatch(router, /\bz\.\w+\(/, `routers/${folder}/router.ts defines a schema inline`);
  }
});
