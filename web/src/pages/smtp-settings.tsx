import { Alert, Button, NumberInput, PasswordInput, Stack, Switch, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from 'console-admin/client';
import { useState, type FormEvent } from 'react';
import { messageOf, useTRPC } from '../api.ts';
import { placeError } from '../field-error.ts';
import { Refused } from '../refused.tsx';
import { useI18n } from '../i18n/index.tsx';
import { notify } from '../notify.ts';
import { SubmitRow } from '../submit-row.tsx';
import { SmtpTest } from './smtp-test.tsx';

type Stored = inferRouterOutputs<AppRouter>['smtp']['get'];
type Form = inferRouterInputs<AppRouter>['smtp']['update'];
const TEXT_FIELDS = ['host', 'username', 'from_email', 'from_name'] as const;
const FIELDS = [...TEXT_FIELDS, 'port', 'password', 'use_tls', 'use_ssl'];

function SmtpForm({ stored }: { stored: Stored }) {
  const { t } = useI18n();
  const trpc = useTRPC();
  const queries = useQueryClient();
  // The password is never answered: it is typed again on each save.
  const [form, setForm] = useState<Required<Form>>({ ...stored, password: '' });
  const [testing, setTesting] = useState(false);
  const update = useMutation(
    trpc.smtp.update.mutationOptions({
      onSuccess: (saved) => {
        queries.setQueryData(trpc.smtp.get.queryKey(), saved);
        setForm({ ...saved, password: '' });
        notify(t('smtp.saved'), t('common.close'));
      },
    }),
  );
  const refusal = placeError(update.error, FIELDS);
  const errorOf = refusal.at;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    update.mutate(form);
  };
  return (
    <>
      <form onSubmit={submit} noValidate>
        <Stack maw={560}>
          <Refused message={refusal.general} />
          {TEXT_FIELDS.map((name) => (
            <TextInput
              key={name}
              label={t(`smtp.${name}`)}
              type={name === 'from_email' ? 'email' : 'text'}
              autoComplete="off"
              value={form[name]}
              error={errorOf(name)}
              onChange={(e) => setForm({ ...form, [name]: e.currentTarget.value })}
            />
          ))}
          <NumberInput
            label={t('smtp.port')}
            value={form.port}
            min={1}
            max={65535}
            allowDecimal={false}
            clampBehavior="none"
            error={errorOf('port')}
            onChange={(port) => setForm({ ...form, port: Number(port) })}
          />
          <PasswordInput
            label={t('smtp.password')}
            description={t('smtp.password_hint')}
            autoComplete="new-password"
            value={form.password}
            error={errorOf('password')}
            onChange={(e) => setForm({ ...form, password: e.currentTarget.value })}
          />
          <Switch
            label={t('smtp.use_tls')}
            checked={form.use_tls}
            error={errorOf('use_tls')}
            onChange={(e) => setForm({ ...form, use_tls: e.currentTarget.checked })}
          />
          <Switch
            label={t('smtp.use_ssl')}
            checked={form.use_ssl}
            error={errorOf('use_ssl')}
            onChange={(e) => setForm({ ...form, use_ssl: e.currentTarget.checked })}
          />
          <SubmitRow label={t('smtp.save')} pending={update.isPending}>
            <Button variant="default" onClick={() => setTesting(true)}>
              {t('smtp.test')}
            </Button>
          </SubmitRow>
        </Stack>
      </form>
      {testing && <SmtpTest onClose={() => setTesting(false)} />}
    </>
  );
}

/** The mail settings (administrators only, as the API): edit them, and send a test email through them. */
export function SmtpSettings() {
  const { t } = useI18n();
  const trpc = useTRPC();
  const stored = useQuery(trpc.smtp.get.queryOptions());
  return (
    <Stack mt="lg">
      <Title order={3}>{t('smtp.title')}</Title>
      {stored.error && (
        <Alert color="red" role="alert">
          {messageOf(stored.error)}
        </Alert>
      )}
      {stored.data && <SmtpForm stored={stored.data} />}
    </Stack>
  );
}
