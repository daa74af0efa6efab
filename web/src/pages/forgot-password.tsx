import { Alert, Anchor, Button, Stack, TextInput } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useTRPC } from '../api.ts';
import { ErrorAlert } from '../error-alert.tsx';
import { useI18n } from '../i18n/index.tsx';
import { PublicCard } from './sign-in.tsx';

/** Asks for a reset link; the service answers the same whether or not the address is known, and so does the page. */
export function Component() {
  const { t } = useI18n();
  const trpc = useTRPC();
  const request = useMutation(trpc.auth.requestPasswordReset.mutationOptions());
  const [email, setEmail] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    request.mutate({ email: email.trim() });
  };
  return (
    <PublicCard title={t('forgot.title')}>
      {request.isSuccess ? (
        <Alert color="green" role="status">
          {t('forgot.sent')}
        </Alert>
      ) : (
        <form onSubmit={submit} noValidate>
          <Stack>
            <ErrorAlert error={request.error} />
            <TextInput
              label={t('forgot.email')}
              description={t('forgot.hint')}
              type="email"
              value={email}
              onChange={(e) => setEmail(e.currentTarget.value)}
              autoComplete="email"
              required
            />
            <Button type="submit" loading={request.isPending}>
              {t('forgot.submit')}
            </Button>
          </Stack>
        </form>
      )}
      <Anchor component={Link} to="/signin" size="sm">
        {t('forgot.back')}
      </Anchor>
    </PublicCard>
  );
}
