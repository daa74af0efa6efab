import { Center, Loader } from '@mantine/core';
import { lazy, Suspense } from 'react';
import {
  createBrowserRouter,
  Navigate,
  Outlet,
  useLocation,
  type LazyRouteFunction,
  type RouteObject,
} from 'react-router';
import { basename } from './config.ts';
import type { MessageKey } from './i18n/en.ts';
import { ForbiddenPage, NotFoundPage } from './pages/status-pages.tsx';
import { SignInPage } from './pages/sign-in.tsx';
import { can, useMe } from './permissions.tsx';
import { useSession } from './session.ts';

/** A page of the shell: its path, navigation label, the permission it needs, and its lazily loaded module. */
export interface PageDef {
  path: string;
  label: MessageKey;
  permission?: string;
  load: LazyRouteFunction<RouteObject>;
}

// Each page is a chunk of its own, loaded when first opened; the sign-in page and the shell are in the first one.
export const PAGES: PageDef[] = [
  { path: '', label: 'nav.overview', load: () => import('./pages/overview.tsx') },
  { path: 'users', label: 'nav.users', permission: 'user:list', load: () => import('./pages/users.tsx') },
  { path: 'roles', label: 'nav.roles', permission: 'role:list', load: () => import('./pages/roles.tsx') },
  {
    path: 'organizations',
    label: 'nav.organizations',
    permission: 'org:list',
    load: () => import('./pages/organizations.tsx'),
  },
  {
    path: 'permissions',
    label: 'nav.permissions',
    permission: 'permission:list',
    load: () => import('./pages/permissions.tsx'),
  },
  { path: 'tasks', label: 'nav.tasks', permission: 'task:list', load: () => import('./pages/tasks.tsx') },
  {
    path: 'schedules',
    label: 'nav.schedules',
    permission: 'task:schedule:list',
    load: () => import('./pages/schedules.tsx'),
  },
  {
    path: 'settings',
    label: 'settings.nav',
    permission: 'system:settings:view',
    load: () => import('./pages/settings.tsx'),
  },
  { path: 'audit-log', label: 'audit.nav', permission: 'audit_log:list', load: () => import('./pages/audit-log.tsx') },
  { path: 'profile', label: 'nav.profile', load: () => import('./pages/profile.tsx') },
];

/** Pages reached from another page's links, not from the navigation. */
export const LINKED_PAGES: Omit<PageDef, 'label'>[] = [
  { path: 'tasks/:id', permission: 'task:view', load: () => import('./pages/task.tsx') },
];

const loading = (
  <Center h="100vh">
    <Loader aria-label="Loading" />
  </Center>
);

// The shell (navigation, header, menus) is a chunk of its own: the sign-in page does not need it.
const Shell = lazy(async () => ({ default: (await import('./shell/shell.tsx')).Shell }));

function RequireSession() {
  const { token } = useSession();
  const location = useLocation();
  if (!token) return <Navigate to="/signin" replace state={{ from: location.pathname + location.search }} />;
  return (
    <Suspense fallback={loading}>
      <Shell />
    </Suspense>
  );
}

/** A forbidden page shows its own page; its code is not even loaded. */
function RequirePermission({ code }: { code: string | undefined }) {
  return can(useMe(), code) ? <Outlet /> : <ForbiddenPage />;
}

export const router = createBrowserRouter(
  [
    {
      hydrateFallbackElement: loading,
      children: [
        { path: 'signin', element: <SignInPage /> },
        // Pages a signed-out visitor opens from a mail or a provider's redirect; each a chunk of its own.
        { path: 'forgot-password', lazy: () => import('./pages/forgot-password.tsx') },
        { path: 'reset-password', lazy: () => import('./pages/reset-password.tsx') },
        { path: 'oauth/:name/callback', lazy: () => import('./pages/oauth-callback.tsx') },
        {
          element: <RequireSession />,
          children: [
            ...[...PAGES, ...LINKED_PAGES].map(({ path, permission, load }) => ({
              path,
              element: <RequirePermission code={permission} />,
              children: [{ index: true, lazy: load }],
            })),
            { path: '*', element: <NotFoundPage /> },
          ],
        },
      ],
    },
  ],
  { basename },
);
