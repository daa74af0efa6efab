import { Button, Divider, Group, PasswordInput, Stack, Text } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useTRPC } from '../api.ts';
import { ErrorAlert } from '../error-alert.tsx';
import { useI18n } from '../i18n/index.tsx';
import { notify } from '../notify.ts';
import type { User } from './users.tsx';

/** In a user's edit dialog: set a password without the old one (ends their sessions), and lift a lock. */
export function UserAccess({ user }: { user: User }) {
  const { t } = useI18n();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const [password, setPassword] = useState('');
  const done = (message: string) => () => {
    void queries.invalidateQueries(trpc.users.list.pathFilter());
    notify(message, t('common.close'));
  };
  const setPasswordCall = useMutation(
    trpc.users.setPassword.mutationOptions({
      onSuccess: () => {
        setPassword('');
        done(t('users.password_set'))();
      },
    }),
  );
  const unlock = useMutation(trpc.users.unlock.mutationOptions({ onSuccess: done(t('users.unlocked')) }));
  return (
    <Stack gap="sm">
      <Divider />
      <ErrorAlert error={setPasswordCall.error ?? unlock.error} />
      <Group align="flex-end" wrap="nowrap">
        <PasswordInput
          label={t('users.new_password')}
          description={t('users.new_password_hint')}
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
          autoComplete="new-password"
          flex={1}
        />
        <Button
          variant="default"
          loading={setPasswordCall.isPending}
          disabled={!password}
          onClick={() => setPasswordCall.mutate({ id: user.id, password })}
        >
          {t('users.set_password')}
        </Button>
      </Group>
      {user.status === 'locked' && !unlock.isSuccess && (
        <Group justify="space-between">
          <Text size="sm">{t('users.locked_text')}</Text>
          <Button variant="default" loading={unlock.isPending} onClick={() => unlock.mutate({ id: user.id })}>
            {t('users.unlock')}
          </Button>
        </Group>
      )}
    </Stack>
  );
}
