import { Button, Menu } from '@mantine/core';
import { useMantineColorScheme, type MantineColorScheme } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { queryClient, useTRPC } from '../api.ts';
import { LANGUAGES, useI18n, type Language } from '../i18n/index.tsx';
import type { MessageKey } from '../i18n/en.ts';
import type { Me } from '../permissions.tsx';
import { session } from '../session.ts';

const SCHEMES: [MantineColorScheme, MessageKey][] = [
  ['light', 'theme.light'],
  ['dark', 'theme.dark'],
  ['auto', 'theme.auto'],
];

/** The header's menu: profile, language, theme, sign out. */
export function UserMenu({ me }: { me: Me }) {
  const { t, language, setLanguage } = useI18n();
  const { colorScheme, setColorScheme } = useMantineColorScheme();
  const navigate = useNavigate();
  const trpc = useTRPC();
  const logout = useMutation(trpc.auth.logout.mutationOptions());
  // The session ends here whatever the service says: a failed logout still forgets the token.
  const signOut = () => {
    logout.mutate(undefined, {
      onSettled: () => {
        session.end('signed_out');
        queryClient.clear();
      },
    });
  };
  return (
    <Menu position="bottom-end" width={220}>
      <Menu.Target>
        <Button variant="subtle" aria-label={`${t('menu.user')}: ${me.username}`}>
          {me.username}
        </Button>
      </Menu.Target>
      <Menu.Dropdown>
        <Menu.Item onClick={() => navigate('/profile')}>{t('nav.profile')}</Menu.Item>
        <Menu.Divider />
        <Menu.Label>{t('lang.label')}</Menu.Label>
        {Object.entries(LANGUAGES).map(([code, { name }]) => (
          <Menu.Item
            key={code}
            lang={code}
            aria-current={code === language}
            onClick={() => setLanguage(code as Language)}
            className={code === language ? 'menu-current' : undefined}
          >
            {name}
          </Menu.Item>
        ))}
        <Menu.Divider />
        <Menu.Label>{t('theme.label')}</Menu.Label>
        {SCHEMES.map(([scheme, label]) => (
          <Menu.Item
            key={scheme}
            aria-current={scheme === colorScheme}
            onClick={() => setColorScheme(scheme)}
            className={scheme === colorScheme ? 'menu-current' : undefined}
          >
            {t(label)}
          </Menu.Item>
        ))}
        <Menu.Divider />
        <Menu.Item color="red" onClick={signOut}>
          {t('menu.signout')}
        </Menu.Item>
      </Menu.Dropdown>
    </Menu>
  );
}
