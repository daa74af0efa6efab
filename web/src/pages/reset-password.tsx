import { Alert, Anchor, Button, PasswordInput, Stack } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { useTRPC } from '../api.ts';
import { ErrorAlert } from '../error-alert.tsx';
import { useI18n } from '../i18n/index.tsx';
import { session } from '../session.ts';
import { PublicCard } from './sign-in.tsx';

// The mailed link carries the token in the fragment (never sent to a server); it is read once and taken out of the
// address bar, so neither history nor a bookmark keeps it.
function takeToken(): string {
  const token = new URLSearchParams(location.hash.slice(1)).get('token') ?? '';
  if (location.hash) history.replaceState(history.state, '', location.pathname + location.search);
  return token;
}

export function Component() {
  const { t } = useI18n();
  const trpc = useTRPC();
  const navigate = useNavigate();
  const [token] = useState(takeToken);
  const [password, setPassword] = useState('');
  const confirm = useMutation(
    trpc.auth.confirmPasswordReset.mutationOptions({
      onSuccess: () => {
        session.tell('password_changed');
        void navigate('/signin', { replace: true });
      },
    }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    confirm.mutate({ token, password });
  };
  return (
    <PublicCard title={t('reset.title')}>
      {!token ? (
        <Alert color="red" role="alert">
          {t('reset.no_token')}
        </Alert>
      ) : (
        <form onSubmit={submit} noValidate>
          <Stack>
            <ErrorAlert error={confirm.error} />
            <PasswordInput
              label={t('reset.password')}
              value={password}
              onChange={(e) => setPassword(e.currentTarget.value)}
              autoComplete="new-password"
              required
            />
            <Button type="submit" loading={confirm.isPending}>
              {t('reset.submit')}
            </Button>
          </Stack>
        </form>
      )}
      <Anchor component={Link} to="/forgot-password" size="sm">
        {t('reset.again')}
      </Anchor>
    </PublicCard>
  );
}
