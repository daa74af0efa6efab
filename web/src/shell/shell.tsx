import { Alert, Burger, Center, Drawer, Group, Loader, NavLink, Text, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useQuery } from '@tanstack/react-query';
import { Suspense } from 'react';
import { NavLink as RouterLink, Outlet, useNavigation } from 'react-router';
import { useTRPC } from '../api.ts';
import { useUnreachable } from '../connectivity.ts';
import { useI18n } from '../i18n/index.tsx';
import { LiveTasksContext, useLiveTasks } from '../live-tasks.ts';
import { can, MeContext, type Me } from '../permissions.tsx';
import { PAGES } from '../routes.tsx';
import { PasswordNotice } from './password-notice.tsx';
import { RunningTasks } from './running-tasks.tsx';
import { OrgSwitcher, useForgetStaleOrganization } from './org-switcher.tsx';
import { preloadPage, usePreloadPages } from './preload-pages.ts';
import { UserMenu } from './user-menu.tsx';

function Navigation({ me, onNavigate }: { me: Me; onNavigate?: () => void }) {
  const { t } = useI18n();
  return (
    <nav aria-label={t('nav.label')}>
      {PAGES.filter((p) => can(me, p.permission)).map((p) => (
        <RouterLink
          key={p.path}
          to={`/${p.path}`}
          end
          onClick={onNavigate}
          // A pointer on the link or the focus on it is the first sign of a visit: its code is fetched then.
          onPointerEnter={() => preloadPage(p)}
          onFocus={() => preloadPage(p)}
          className="nav-link"
        >
          {({ isActive }) => <NavLink component="span" label={t(p.label)} active={isActive} />}
        </RouterLink>
      ))}
    </nav>
  );
}

/** The frame of every signed-in page: header, navigation by permission, the unreachable banner, the page. */
export function Shell() {
  const { t } = useI18n();
  const trpc = useTRPC();
  const me = useQuery(trpc.auth.me.queryOptions());
  const unreachable = useUnreachable();
  const [drawer, { toggle, close }] = useDisclosure(false);
  const navigation = useNavigation();
  // One live task stream per tab: the header's count and the pages under it share it.
  const liveTasks = useLiveTasks(!!me.data && can(me.data, 'task:list'));
  useForgetStaleOrganization();
  usePreloadPages(me.data);
  if (!me.data) {
    return (
      <Center h="100vh">
        {me.error && !unreachable ? (
          <Alert color="red">{t('app.error', { message: me.error.message })}</Alert>
        ) : (
          <Loader aria-label={t('app.loading')} />
        )}
      </Center>
    );
  }
  return (
    <MeContext.Provider value={me.data}>
      <a className="skip-link" href="#main">
        {t('app.skip')}
      </a>
      <div className="shell">
        <header className="shell-header">
          <Group gap="sm" wrap="nowrap">
            <Burger className="phone-only" opened={drawer} onClick={toggle} aria-label={t('nav.toggle')} size="sm" />
            <Title order={1} size="h4">
              {t('app.name')}
            </Title>
          </Group>
          <Group gap="xs" wrap="nowrap">
            <RunningTasks me={me.data} tasks={liveTasks.tasks} />
            <OrgSwitcher />
            <UserMenu me={me.data} />
          </Group>
        </header>
        <aside className="shell-nav wide-only">
          <Navigation me={me.data} />
        </aside>
        <Drawer
          opened={drawer}
          onClose={close}
          title={t('app.name')}
          size="xs"
          closeButtonProps={{ 'aria-label': t('common.close') }}
          lockScroll={false}
        >
          <Navigation me={me.data} onNavigate={close} />
        </Drawer>
        <main id="main" className="shell-main" aria-busy={navigation.state === 'loading'}>
          {unreachable && (
            <Alert color="red" role="alert" mb="md">
              <Text size="sm">{t('app.unreachable')}</Text>
            </Alert>
          )}
          <PasswordNotice me={me.data} />
          <Suspense fallback={<Loader aria-label={t('app.loading')} />}>
            <LiveTasksContext.Provider value={liveTasks}>
              <Outlet />
            </LiveTasksContext.Provider>
          </Suspense>
        </main>
      </div>
    </MeContext.Provider>
  );
}
