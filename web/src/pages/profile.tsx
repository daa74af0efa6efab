import { Alert, Button, Group, Modal, PasswordInput, Stack, Switch, Table, TextInput, Title } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { queryClient, useTRPC } from '../api.ts';
import { ErrorAlert } from '../error-alert.tsx';
import { formatTime } from '../format.ts';
import { useI18n } from '../i18n/index.tsx';
import { LanguageSelect } from '../language-select.tsx';
import { useMe, type Me } from '../permissions.tsx';
import { session } from '../session.ts';
import { SubmitRow } from '../submit-row.tsx';

/** PUT /auth/me; the shell's /auth/me is fetched again after it. */
function useUpdateMe(onDone: () => void) {
  const trpc = useTRPC();
  const queries = useQueryClient();
  return useMutation(
    trpc.auth.updateMe.mutationOptions({
      onSuccess: () => {
        void queries.invalidateQueries(trpc.auth.me.queryFilter());
        onDone();
      },
    }),
  );
}

/** Full name and email; a new email takes the current password. */
function DetailsForm({ me }: { me: Me }) {
  const { t } = useI18n();
  const [form, setForm] = useState({ full_name: me.full_name, email: me.email, password: '' });
  const [saved, setSaved] = useState(false);
  const update = useUpdateMe(() => {
    setSaved(true);
    setForm((f) => ({ ...f, password: '' }));
  });
  const emailChanged = form.email.trim().toLowerCase() !== me.email.toLowerCase();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    const { full_name, email, password } = form;
    update.mutate({ full_name, email: email.trim(), ...(emailChanged ? { password } : {}) });
  };
  return (
    <form onSubmit={submit} noValidate aria-labelledby="profile-details">
      <Stack maw={420}>
        <Title order={3} id="profile-details">
          {t('profile.details')}
        </Title>
        <ErrorAlert error={update.error} />
        {saved && <Alert color="green">{t('common.saved')}</Alert>}
        <TextInput
          label={t('profile.full_name')}
          value={form.full_name}
          onChange={(e) => setForm({ ...form, full_name: e.currentTarget.value })}
          autoComplete="name"
        />
        <TextInput
          label={t('profile.email')}
          type="email"
          value={form.email}
          onChange={(e) => setForm({ ...form, email: e.currentTarget.value })}
          autoComplete="email"
          required
        />
        {emailChanged && (
          <PasswordInput
            label={t('profile.current_password')}
            value={form.password}
            onChange={(e) => setForm({ ...form, password: e.currentTarget.value })}
            autoComplete="current-password"
            required
          />
        )}
        <SubmitRow label={t('common.save')} pending={update.isPending} />
      </Stack>
    </form>
  );
}

/** PUT /auth/me/password: every session ends, so the page returns to sign-in saying so. */
function PasswordForm() {
  const { t } = useI18n();
  const trpc = useTRPC();
  const [form, setForm] = useState({ old_password: '', new_password: '' });
  const change = useMutation(
    trpc.auth.changePassword.mutationOptions({
      onSuccess: () => {
        session.end('password_changed');
        queryClient.clear();
      },
    }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    change.mutate(form);
  };
  return (
    <form onSubmit={submit} noValidate aria-labelledby="profile-password">
      <Stack maw={420}>
        <Title order={3} id="profile-password">
          {t('profile.password')}
        </Title>
        <ErrorAlert error={change.error} />
        <PasswordInput
          label={t('profile.current_password')}
          value={form.old_password}
          onChange={(e) => setForm({ ...form, old_password: e.currentTarget.value })}
          autoComplete="current-password"
          required
        />
        <PasswordInput
          label={t('profile.new_password')}
          description={t('profile.new_password_hint')}
          value={form.new_password}
          onChange={(e) => setForm({ ...form, new_password: e.currentTarget.value })}
          autoComplete="new-password"
          required
        />
        <SubmitRow label={t('profile.change_password')} pending={change.isPending} />
      </Stack>
    </form>
  );
}

/** MFA by emailed codes: turning it on or off is confirmed with the current password in a dialog. */
function MfaSwitch({ me }: { me: Me }) {
  const { t } = useI18n();
  const [confirming, setConfirming] = useState(false);
  const [password, setPassword] = useState('');
  const close = () => {
    setConfirming(false);
    setPassword('');
    update.reset();
  };
  const update = useUpdateMe(close);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    update.mutate({ mfa_enabled: !me.mfa_enabled, password });
  };
  return (
    <Stack maw={420}>
      <Title order={3}>{t('profile.mfa')}</Title>
      <Switch
        label={t('profile.mfa_switch')}
        description={t('profile.mfa_hint')}
        checked={me.mfa_enabled}
        onChange={() => setConfirming(true)}
      />
      {confirming && (
        <Modal
          opened
          onClose={close}
          title={me.mfa_enabled ? t('profile.mfa_off') : t('profile.mfa_on')}
          closeButtonProps={{ 'aria-label': t('common.close') }}
          lockScroll={false}
        >
          <form onSubmit={submit} noValidate>
            <Stack>
              <ErrorAlert error={update.error} />
              <PasswordInput
                label={t('profile.current_password')}
                value={password}
                onChange={(e) => setPassword(e.currentTarget.value)}
                autoComplete="current-password"
                required
                data-autofocus
              />
              <Group justify="flex-end">
                <Button variant="default" onClick={close}>
                  {t('common.cancel')}
                </Button>
                <Button type="submit" loading={update.isPending}>
                  {me.mfa_enabled ? t('profile.mfa_off') : t('profile.mfa_on')}
                </Button>
              </Group>
            </Stack>
          </form>
        </Modal>
      )}
    </Stack>
  );
}

export function Component() {
  const { t, language } = useI18n();
  const me = useMe();
  const rows: [string, string][] = [
    [t('profile.username'), me.username],
    [t('profile.roles'), me.roles.map((r) => r.name).join(', ') || t('common.none')],
    [t('profile.last_login'), formatTime(me.last_login_at, language)],
  ];
  return (
    <Stack gap="xl">
      <Title order={2}>{t('nav.profile')}</Title>
      <Table variant="vertical" withTableBorder maw={560}>
        <Table.Tbody>
          {rows.map(([label, value]) => (
            <Table.Tr key={label}>
              <Table.Th w={160}>{label}</Table.Th>
              <Table.Td>{value}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <DetailsForm me={me} />
      <PasswordForm />
      <MfaSwitch me={me} />
      <LanguageSelect maw={420} />
    </Stack>
  );
}
