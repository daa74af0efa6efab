// npm run screenshots — the README's pictures of the web console, from a real run on seeded data (see
// tools/web-demo.ts): the users page (light), a task's page (light) and the audit log (dark), written to
// docs/screenshots/.
import { mkdirSync } from 'node:fs';
import { startWebDemo } from './web-demo.ts';

const OUT = 'docs/screenshots';
mkdirSync(OUT, { recursive: true });

const demo = await startWebDemo({ users: 240, tasks: 60, audit: 400 });
try {
  const light = await demo.signedIn({ width: 1280, height: 760 });
  await light.getByRole('link', { name: 'Users', exact: true }).click();
  await light.locator('main table tbody tr').nth(9).waitFor();
  await light.screenshot({ path: `${OUT}/users.png` });

  const answer = await fetch(`${demo.base}/api/tasks?page_size=1`, {
    headers: { authorization: `Bearer ${demo.token}` },
  });
  const [task] = ((await answer.json()) as { data: { id: string }[] }).data;
  await light.goto(`${demo.base}/admin/tasks/${task!.id}`);
  await light.getByRole('progressbar').first().waitFor();
  await light.screenshot({ path: `${OUT}/task.png` });

  const dark = await demo.signedIn({ width: 1280, height: 760, colorScheme: 'dark' });
  await dark.getByRole('link', { name: 'Audit log', exact: true }).click();
  await dark.locator('main table tbody tr').nth(9).waitFor();
  await dark.screenshot({ path: `${OUT}/audit-log.png` });
  console.log(`screenshots: ${OUT}/users.png, ${OUT}/task.png, ${OUT}/audit-log.png`);
} finally {
  await demo.close();
}
