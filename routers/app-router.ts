import { auditRouter } from './audit/router.ts';
import { authRouter } from './auth/router.ts';
import { permissionsRouter } from './permissions/router.ts';
import { rolesRouter } from './roles/router.ts';
import { settingsRouter } from './settings/router.ts';
import { router } from './shared/trpc.ts';
import { usersRouter } from './users/router.ts';

export const appRouter = router({
  auth: authRouter,
  users: usersRouter,
  roles: rolesRouter,
  permissions: permissionsRouter,
  settings: settingsRouter,
  audit: auditRouter,
});

/** The type a typed client (`createTRPCClient<AppRouter>`) is built from. */
export type AppRouter = typeof appRouter;
