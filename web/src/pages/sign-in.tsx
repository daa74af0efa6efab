import { Alert, Button, Center, Group, Paper, PasswordInput, Select, Stack, TextInput, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Navigate, useLocation } from 'react-router';
import { appCodeOf, messageOf, queryClient, useTRPC } from '../api.ts';
import { LANGUAGES, useI18n, type Language } from '../i18n/index.tsx';
import type { MessageKey } from '../i18n/en.ts';
import { session, useSession } from '../session.ts';

/**
 * What to say about a refused sign-in: the service's own message, in the UI's language (a wrong password, a disabled
 * or a locked account, a wrong or expired code each have theirs), except for the rate limit, said in full here.
 */
function refusal(error: unknown, t: (key: MessageKey) => string): string {
  if (appCodeOf(error) === 'E4291') return t('signin.rate_limited');
  const message = messageOf(error);
  return message.charAt(0).toUpperCase() + message.slice(1);
}

export function SignInPage() {
  const { t, language, setLanguage } = useI18n();
  const { token, ended } = useSession();
  const location = useLocation();
  const trpc = useTRPC();
  const login = useMutation(trpc.auth.login.mutationOptions());
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [mfa, setMfa] = useState<{ token: string; code: string } | undefined>();

  if (token) return <Navigate to={(location.state as { from?: string } | null)?.from ?? '/'} replace />;

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
    <Center mih="100vh" p="md">
      <Paper component="main" withBorder shadow="sm" p="xl" w="100%" maw={380}>
        <form onSubmit={submit} noValidate>
          <Stack>
            <Title order={1} size="h3">
              {t('signin.title')}
            </Title>
            {ended && !login.error && (
              <Alert color={ended === 'session_expired' ? 'yellow' : 'blue'}>{t(`signin.${ended}`)}</Alert>
            )}
            {login.error && (
              <Alert color="red" role="alert">
                {refusal(login.error, t)}
              </Alert>
            )}
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
              </>
            )}
            <Select
              label={t('lang.label')}
              data={Object.entries(LANGUAGES).map(([value, { name }]) => ({ value, label: name }))}
              value={language}
              onChange={(value) => value && setLanguage(value as Language)}
              allowDeselect={false}
              size="xs"
            />
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
