import {
  Alert,
  Anchor,
  Button,
  Center,
  Divider,
  Group,
  Paper,
  PasswordInput,
  Stack,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent, type ReactNode } from 'react';
import { Link, Navigate, useLocation } from 'react-router';
import { appCodeOf, messageOf, queryClient, useTRPC } from '../api.ts';
import { serviceRoot } from '../config.ts';
import { useI18n } from '../i18n/index.tsx';
import { LanguageSelect } from '../language-select.tsx';
import type { MessageKey } from '../i18n/en.ts';
import { session, useSession, type EndReason } from '../session.ts';

/**
 * What to say about a refused sign-in: the service's own message, in the UI's language (a wrong password, a disabled
 * or a locked account, a wrong or expired code each have theirs), except for the rate limit, said in full here.
 */
export function refusal(error: unknown, t: (key: MessageKey) => string): string {
  if (appCodeOf(error) === 'E4291') return t('signin.rate_limited');
  const message = messageOf(error);
  return message.charAt(0).toUpperCase() + message.slice(1);
}

/** What the sign-in page is opened with: where to go next, or an OAuth login's MFA step to finish. */
export interface SignInState {
  from?: string;
  mfaToken?: string;
}

/** The frame of the pages a signed-out visitor sees: a card with a heading, and the language choice below. */
export function PublicCard({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Center mih="100vh" p="md">
      <Paper component="main" withBorder shadow="sm" p="xl" w="100%" maw={380}>
        <Stack>
          <Title order={1} size="h3">
            {title}
          </Title>
          {children}
          <LanguageSelect size="xs" />
        </Stack>
      </Paper>
    </Center>
  );
}

const NOTICE_COLOR: Record<EndReason, string> = {
  session_expired: 'yellow',
  signed_out: 'blue',
  password_changed: 'green',
};

// The icons the page's CSP lets load (img-src 'self' data: https:): any other address would only be refused.
const SHOWN_ICON = /^(https:\/\/|data:image\/|\/(?!\/))/i;

/** The providers `oauth.providers` offers; each button starts the login at the service (it redirects on). */
function ProviderButtons() {
  const { t } = useI18n();
  const trpc = useTRPC();
  const providers = useQuery(trpc.oauth.providers.queryOptions());
  if (!providers.data?.length) return null;
  return (
    <>
      <Divider label={t('signin.or')} />
      {providers.data.map((p) => (
        <Button
          key={p.name}
          component="a"
          variant="default"
          href={`${serviceRoot}api/auth/oauth/${encodeURIComponent(p.name)}/authorize`}
          leftSection={
            p.icon_url && SHOWN_ICON.test(p.icon_url) ? (
              // Decorative: the button's text names the provider. No referrer: the icon's host learns nothing.
              <img src={p.icon_url} alt="" width={16} height={16} referrerPolicy="no-referrer" />
            ) : undefined
          }
        >
          {t('signin.with', { name: p.display_name })}
        </Button>
      ))}
    </>
  );
}

export function SignInPage() {
  const { t } = useI18n();
  const { token, ended } = useSession();
  const location = useLocation();
  const opened = (location.state as SignInState | null) ?? {};
  const trpc = useTRPC();
  const login = useMutation(trpc.auth.login.mutationOptions());
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [mfa, setMfa] = useState(opened.mfaToken ? { token: opened.mfaToken, code: '' } : undefined);

  if (token) return <Navigate to={opened.from ?? '/'} replace />;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const input = mfa ? { mfa_token: mfa.token, mfa_code: mfa.code } : { username, password };
    login.mutate(input, {
      onSuccess: (answer) => {
        if ('mfa_required' in answer) return setMfa({ token: answer.mfa_token, code: '' });
        queryClient.clear();
        session.start(answer.token);
      },
    });
  };
  const back = () => {
    setMfa(undefined);
    login.reset();
  };

  return (
    <PublicCard title={t('signin.title')}>
      {ended && !login.error && <Alert color={NOTICE_COLOR[ended]}>{t(`signin.${ended}`)}</Alert>}
      {login.error && (
        <Alert color="red" role="alert">
          {refusal(login.error, t)}
        </Alert>
      )}
      <form onSubmit={submit} noValidate>
        <Stack>
          {mfa ? (
            <>
              <TextInput
                label={t('signin.mfa_code')}
                description={t('signin.mfa_hint')}
                value={mfa.code}
                onChange={(e) => setMfa({ ...mfa, code: e.currentTarget.value })}
                autoComplete="one-time-code"
                inputMode="numeric"
                required
                data-autofocus
              />
              <Group justify="space-between">
                <Button variant="default" onClick={back}>
                  {t('signin.back')}
                </Button>
                <Button type="submit" loading={login.isPending}>
                  {t('signin.verify')}
                </Button>
              </Group>
            </>
          ) : (
            <>
              <TextInput
                label={t('signin.username')}
                value={username}
                onChange={(e) => setUsername(e.currentTarget.value)}
                autoComplete="username"
                required
              />
              <PasswordInput
                label={t('signin.password')}
                value={password}
                onChange={(e) => setPassword(e.currentTarget.value)}
                autoComplete="current-password"
                required
              />
              <Button type="submit" loading={login.isPending}>
                {t('signin.submit')}
              </Button>
              <Anchor component={Link} to="/forgot-password" size="sm">
                {t('signin.forgot')}
              </Anchor>
            </>
          )}
        </Stack>
      </form>
      {!mfa && <ProviderButtons />}
    </PublicCard>
  );
}
