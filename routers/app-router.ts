import { auditRouter } from './audit/router.ts';
import { authRouter } from './auth/router.ts';
import { filesRouter } from './files/router.ts';
import { oauthRouter } from './oauth/router.ts';
import { organizationsRouter } from './organizations/router.ts';
import { permissionsRouter } from './permissions/router.ts';
import { rolesRouter } from './roles/router.ts';
import { schedulesRouter } from './schedules/router.ts';
import { settingsRouter } from './settings/router.ts';
import { router } from './common/trpc.ts';
import { smtpRouter } from './smtp/router.ts';
import { tasksRouter } from './tasks/router.ts';
import { userExportRouter } from './user-export/router.ts';
import { usersRouter } from './users/router.ts';

export const appRouter = router({
  auth: authRouter,
  oauth: oauthRouter,
  users: usersRouter,
  roles: rolesRouter,
  organizations: organizationsRouter,
  permissions: permissionsRouter,
  settings: settingsRouter,
  smtp: smtpRouter,
  audit: auditRouter,
  tasks: tasksRouter,
  schedules: schedulesRouter,
  files: filesRouter,
  userExport: userExportRouter,
});

/** The type a typed client (`createTRPCClient<AppRouter>`) is built from. */
export type AppRouter = typeof appRouter;
