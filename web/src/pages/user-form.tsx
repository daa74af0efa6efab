import {
  Alert,
  Button,
  Group,
  Modal,
  MultiSelect,
  PasswordInput,
  Select,
  Stack,
  Switch,
  TextInput,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { messageOf, useTRPC } from '../api.ts';
import { useI18n } from '../i18n/index.tsx';
import { notify } from '../notify.ts';
import { useCan } from '../permissions.tsx';
import { UserAccess } from './user-access.tsx';
import type { User } from './users.tsx';

/** Creates a user (no `user`) or edits one: the fields the API takes, roles from the role list. */
export function UserForm({ user, onClose }: { user: User | undefined; onClose: () => void }) {
  const { t } = useI18n();
  const can = useCan();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const roles = useQuery({ ...trpc.roles.list.queryOptions({ page_size: 100 }), enabled: can('role:list') });
  const [form, setForm] = useState({
    username: user?.username ?? '',
    email: user?.email ?? '',
    password: '',
    full_name: user?.full_name ?? '',
    status: user?.status === 'disabled' ? 'disabled' : 'active',
    role_ids: user?.roles.map((r) => r.id) ?? [],
    mfa_enabled: user?.mfa_enabled ?? false,
  });
  const field = (name: 'username' | 'email' | 'password' | 'full_name') => ({
    value: form[name],
    onChange: (e: { currentTarget: { value: string } }) => setForm({ ...form, [name]: e.currentTarget.value }),
  });
  const done = () => {
    void queries.invalidateQueries(trpc.users.list.pathFilter());
    notify(t('common.saved'), t('common.close'));
    onClose();
  };
  const create = useMutation(trpc.users.create.mutationOptions({ onSuccess: done }));
  const update = useMutation(trpc.users.update.mutationOptions({ onSuccess: done }));
  const error = create.error ?? update.error;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const { username, email, password, full_name, status, role_ids, mfa_enabled } = form;
    if (!user) create.mutate({ username, email, password, full_name, role_ids, mfa_enabled });
    else
      update.mutate({ id: user.id, email, full_name, status: status as 'active' | 'disabled', role_ids, mfa_enabled });
  };

  return (
    <Modal
      opened
      onClose={onClose}
      title={user ? t('users.edit_one', { name: user.username }) : t('users.create')}
      closeButtonProps={{ 'aria-label': t('common.close') }}
      lockScroll={false}
    >
      <form onSubmit={submit} noValidate>
        <Stack>
          {error && (
            <Alert color="red" role="alert">
              {messageOf(error)}
            </Alert>
          )}
          {!user && <TextInput label={t('users.username')} required autoComplete="off" {...field('username')} />}
          <TextInput label={t('users.email')} type="email" required autoComplete="off" {...field('email')} />
          {!user && (
            <PasswordInput label={t('users.password')} required autoComplete="new-password" {...field('password')} />
          )}
          <TextInput label={t('users.full_name')} autoComplete="off" {...field('full_name')} />
          {user && (
            <Select
              label={t('users.status')}
              data={[
                { value: 'active', label: t('status.active') },
                { value: 'disabled', label: t('status.disabled') },
              ]}
              value={form.status}
              onChange={(status) => status && setForm({ ...form, status })}
              allowDeselect={false}
            />
          )}
          {roles.data && (
            <MultiSelect
              label={t('users.roles')}
              data={roles.data.data.filter((r) => !r.org_id).map((r) => ({ value: r.id, label: r.name }))}
              value={form.role_ids}
              onChange={(role_ids) => setForm({ ...form, role_ids })}
              comboboxProps={{ withinPortal: true }}
            />
          )}
          <Switch
            label={t('users.mfa')}
            checked={form.mfa_enabled}
            onChange={(e) => setForm({ ...form, mfa_enabled: e.currentTarget.checked })}
          />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t('common.cancel')}
            </Button>
            <Button type="submit" loading={create.isPending || update.isPending}>
              {user ? t('common.save') : t('users.create')}
            </Button>
          </Group>
        </Stack>
      </form>
      {user && <UserAccess user={user} />}
    </Modal>
  );
}
