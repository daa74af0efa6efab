import { Badge, Button, Group } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import type { inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from 'console-admin/client';
import { useState } from 'react';
import { trpcClient, useTRPC } from '../api.ts';
import { ConfirmDelete } from '../confirm-delete.tsx';
import { JUST_READ_MS, readFirst, trpcOptions } from '../first-page.ts';
import { useI18n } from '../i18n/index.tsx';
import { ListPage, RowActions, usePagedSearch } from '../list-controls.tsx';
import { useCan } from '../permissions.tsx';
import { ExportUsers } from './user-export.tsx';
import { UserForm } from './user-form.tsx';

export type User = inferRouterOutputs<AppRouter>['users']['get'];
const PAGE_SIZE = 20;

export const loader = readFirst('user:list', trpcOptions.users.list.queryOptions({ current: 1, page_size: PAGE_SIZE }));

export function Component() {
  const { t } = useI18n();
  const can = useCan();
  const trpc = useTRPC();
  const paged = usePagedSearch();
  const [editing, setEditing] = useState<User | 'new' | undefined>();
  const [deleting, setDeleting] = useState<User | undefined>();
  const list = useQuery({
    ...trpc.users.list.queryOptions({ ...paged.query, page_size: PAGE_SIZE }),
    placeholderData: keepPreviousData,
    staleTime: JUST_READ_MS,
  });

  return (
    <>
      <ListPage
        title={t('users.title')}
        create={
          <Group gap="xs">
            {can('user:export') && <ExportUsers search={paged.query.search ?? ''} />}
            {can('user:create') && <Button onClick={() => setEditing('new')}>{t('users.create')}</Button>}
          </Group>
        }
        search={paged}
        error={list.error}
        page={list.data}
        pageSize={PAGE_SIZE}
        columns={[
          { label: t('users.username'), cell: (user) => user.username },
          { label: t('users.full_name'), cell: (user) => user.full_name },
          { label: t('users.email'), cell: (user) => user.email },
          { label: t('users.roles'), cell: (user) => user.roles.map((r) => r.name).join(', ') },
          {
            label: t('users.status'),
            cell: (user) => (
              <Badge variant="dot" color={user.status === 'active' ? 'green' : 'gray'}>
                {t(`status.${user.status}`)}
              </Badge>
            ),
          },
          {
            label: t('common.actions'),
            cell: (user) => (
              <RowActions
                actions={[
                  {
                    label: t('users.edit_one', { name: user.username }),
                    text: t('common.edit'),
                    onClick: () => setEditing(user),
                    allowed: can('user:update'),
                  },
                  {
                    label: t('users.delete_one', { name: user.username }),
                    text: t('common.delete'),
                    onClick: () => setDeleting(user),
                    danger: true,
                    allowed: can('user:delete'),
                  },
                ]}
              />
            ),
          },
        ]}
        minWidth={640}
      />
      {editing && <UserForm user={editing === 'new' ? undefined : editing} onClose={() => setEditing(undefined)} />}
      {deleting && (
        <ConfirmDelete
          title={t('users.delete_one', { name: deleting.username })}
          text={t('users.delete_confirm', { name: deleting.username })}
          remove={() => trpcClient.users.delete.mutate({ id: deleting.id })}
          changed={trpc.users.list.pathFilter()}
          onClose={() => setDeleting(undefined)}
        />
      )}
    </>
  );
}
