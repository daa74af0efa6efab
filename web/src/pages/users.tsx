import { Alert, Badge, Button, Group, Pagination, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from 'console-admin/client';
import { useState } from 'react';
import { messageOf, useTRPC } from '../api.ts';
import { ConfirmDelete } from '../dialog.tsx';
import { useI18n } from '../i18n/index.tsx';
import { notify } from '../notify.ts';
import { useCan } from '../permissions.tsx';
import { ExportUsers } from './user-export.tsx';
import { UserForm } from './user-form.tsx';

export type User = inferRouterOutputs<AppRouter>['users']['get'];
const PAGE_SIZE = 20;

function DeleteUser({ user, onClose }: { user: User; onClose: () => void }) {
  const { t } = useI18n();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const remove = useMutation(
    trpc.users.delete.mutationOptions({
      onSuccess: () => {
        void queries.invalidateQueries(trpc.users.list.pathFilter());
        notify(t('common.deleted'), t('common.close'));
        onClose();
      },
    }),
  );
  return (
    <ConfirmDelete
      title={t('users.delete_one', { name: user.username })}
      text={t('users.delete_confirm', { name: user.username })}
      pending={remove.isPending}
      error={remove.error}
      onConfirm={() => remove.mutate({ id: user.id })}
      onClose={onClose}
    />
  );
}

export function Component() {
  const { t } = useI18n();
  const can = useCan();
  const trpc = useTRPC();
  const [search, setSearch] = useState('');
  const [term] = useDebouncedValue(search.trim(), 300);
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<User | 'new' | undefined>();
  const [deleting, setDeleting] = useState<User | undefined>();
  const list = useQuery({
    ...trpc.users.list.queryOptions({ current: page, page_size: PAGE_SIZE, ...(term ? { search: term } : {}) }),
    placeholderData: keepPreviousData,
  });
  const pages = Math.max(1, Math.ceil((list.data?.total ?? 0) / PAGE_SIZE));

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{t('users.title')}</Title>
        <Group gap="xs">
          {can('user:export') && <ExportUsers search={term} />}
          {can('user:create') && <Button onClick={() => setEditing('new')}>{t('users.create')}</Button>}
        </Group>
      </Group>
      <TextInput
        label={t('common.search')}
        type="search"
        value={search}
        onChange={(e) => {
          setSearch(e.currentTarget.value);
          setPage(1);
        }}
        maw={360}
      />
      {list.error && (
        <Alert color="red" role="alert">
          {messageOf(list.error)}
        </Alert>
      )}
      <Table.ScrollContainer minWidth={640}>
        <Table striped highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>{t('users.username')}</Table.Th>
              <Table.Th>{t('users.full_name')}</Table.Th>
              <Table.Th>{t('users.email')}</Table.Th>
              <Table.Th>{t('users.roles')}</Table.Th>
              <Table.Th>{t('users.status')}</Table.Th>
              <Table.Th>{t('common.actions')}</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.data?.data.map((user) => (
              <Table.Tr key={user.id}>
                <Table.Td>{user.username}</Table.Td>
                <Table.Td>{user.full_name}</Table.Td>
                <Table.Td>{user.email}</Table.Td>
                <Table.Td>{user.roles.map((r) => r.name).join(', ')}</Table.Td>
                <Table.Td>
                  <Badge variant="dot" color={user.status === 'active' ? 'green' : 'gray'}>
                    {t(`status.${user.status}`)}
                  </Badge>
                </Table.Td>
                <Table.Td>
                  <Group gap="xs" wrap="nowrap">
                    {can('user:update') && (
                      <Button
                        size="xs"
                        variant="default"
                        aria-label={t('users.edit_one', { name: user.username })}
                        onClick={() => setEditing(user)}
                      >
                        {t('common.edit')}
                      </Button>
                    )}
                    {can('user:delete') && (
                      <Button
                        size="xs"
                        variant="default"
                        color="red"
                        aria-label={t('users.delete_one', { name: user.username })}
                        onClick={() => setDeleting(user)}
                      >
                        {t('common.delete')}
                      </Button>
                    )}
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {list.data?.data.length === 0 && <Text c="dimmed">{t('common.empty')}</Text>}
      {pages > 1 && (
        <Pagination
          total={pages}
          value={page}
          onChange={setPage}
          aria-label={t('common.pages')}
          getControlProps={(control) => ({ 'aria-label': control })}
          getItemProps={(n) => ({ 'aria-label': String(n), 'aria-current': n === page ? 'page' : undefined })}
        />
      )}
      {editing && <UserForm user={editing === 'new' ? undefined : editing} onClose={() => setEditing(undefined)} />}
      {deleting && <DeleteUser user={deleting} onClose={() => setDeleting(undefined)} />}
    </Stack>
  );
}
