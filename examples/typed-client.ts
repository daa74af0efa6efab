// A typed client for Console, as a frontend would build it: the router's type is imported (types only, no
// server code reaches the bundle), so every call, input and output is checked by the compiler.
//
//   npm install @trpc/client && npm install --save-dev console-admin   (types only: see the README)
//   node --import tsx examples/typed-client.ts http://localhost:8080 admin 'the-password'
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import type { AppRouter } from 'console-admin/client';

/** `getToken` is read on every request, so logging in (or out) needs no new client. */
export function createConsoleClient(baseUrl: string, getToken: () => string | undefined) {
  return createTRPCClient<AppRouter>({
    links: [
      httpBatchLink({
        url: `${baseUrl.replace(/\/$/, '')}/trpc`,
        headers: () => {
          const token = getToken();
          return token ? { authorization: `Bearer ${token}`, 'accept-language': 'en' } : { 'accept-language': 'en' };
        },
      }),
    ],
  });
}

export type ConsoleClient = ReturnType<typeof createConsoleClient>;

/** Logs in and reads the first page of users. */
export async function loginAndListUsers(baseUrl: string, username: string, password: string) {
  let token: string | undefined;
  const api = createConsoleClient(baseUrl, () => token);
  const session = await api.auth.login.mutate({ username, password });
  // A user with MFA by email gets a challenge instead; finishing it takes the mailed code (mfa_token, mfa_code).
  if ('mfa_required' in session) throw new Error('this example does not handle MFA logins');
  token = session.token;
  // Batched: both queries travel in one HTTP request.
  const [me, users] = await Promise.all([api.auth.me.query(), api.users.list.query({ current: 1, page_size: 20 })]);
  return { me, users: users.data, total: users.total, token };
}

/** The service's error code (E4011, E4031, ...) of a failed call; tRPC's own code says less. */
export function appCode(error: unknown): string | undefined {
  return error instanceof TRPCClientError ? (error.shape as { appCode?: string } | undefined)?.appCode : undefined;
}

/** Never called: shows what the compiler refuses. */
export async function typeErrors(api: ConsoleClient) {
  // @ts-expect-error page_size is a number, not a string
  await api.users.list.query({ page_size: '20' });
  // @ts-expect-error the password is a string
  await api.auth.login.mutate({ username: 'admin', password: 1 });
  // @ts-expect-error there is no such procedure
  await api.users.destroyAll.mutate({});
  const { users } = await loginAndListUsers('', '', '');
  // @ts-expect-error users have no password field
  return users[0]?.password;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [baseUrl = 'http://localhost:8080', username = 'admin', password = ''] = process.argv.slice(2);
  try {
    const { me, users, total } = await loginAndListUsers(baseUrl, username, password);
    console.log(`Logged in as ${me.username} (${me.permissions.length} permissions). ${total} users:`);
    for (const u of users) console.log(`  ${u.username.padEnd(20)} ${u.email.padEnd(32)} ${u.status}`);
  } catch (error) {
    console.error(`failed: ${appCode(error) ?? ''} ${(error as Error).message}`);
    process.exitCode = 1;
  }
}
