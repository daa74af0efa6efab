import { Badge, Button, Group, Text } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import type { inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from 'console-admin/client';
import { useState } from 'react';
import { trpcClient, useTRPC } from '../api.ts';
import { ConfirmDelete } from '../confirm-delete.tsx';
import { JUST_READ_MS, readFirst, trpcOptions } from '../first-page.ts';
import { useI18n } from '../i18n/index.tsx';
import { ListPage, RowActions, usePagedSearch } from '../list-controls.tsx';
import { useMyOrganizations } from '../my-organizations.ts';
import { useCan } from '../permissions.tsx';
import { RoleForm } from './role-form.tsx';

export type Role = inferRouterOutputs<AppRouter>['roles']['get'];
const PAGE_SIZE = 20;

export const loader = readFirst('role:list', trpcOptions.roles.list.queryOptions({ current: 1, page_size: PAGE_SIZE }));

/** Roles, global and of organizations (acting in one, the list holds the global roles and that one's). */
export function Component() {
  const { t } = useI18n();
  const can = useCan();
  const trpc = useTRPC();
  const { nameOf } = useMyOrganizations();
  const paged = usePagedSearch();
  const [editing, setEditing] = useState<Role | 'new' | undefined>();
  const [deleting, setDeleting] = useState<Role | undefined>();
  const list = useQuery({
    ...trpc.roles.list.queryOptions({ ...paged.query, page_size: PAGE_SIZE }),
    placeholderData: keepPreviousData,
    staleTime: JUST_READ_MS,
  });

  return (
    <>
      <ListPage
        title={t('roles.title')}
        create={can('role:create') && <Button onClick={() => setEditing('new')}>{t('roles.create')}</Button>}
        search={paged}
        error={list.error}
        page={list.data}
        pageSize={PAGE_SIZE}
        columns={[
          {
            label: t('roles.name'),
            cell: (role) => (
              <Group gap="xs" wrap="nowrap">
                <Text size="sm">{role.name}</Text>
                {role.is_system && (
                  <Badge variant="light" color="gray">
                    {t('roles.system')}
                  </Badge>
                )}
              </Group>
            ),
          },
          { label: t('roles.description'), cell: (role) => role.description },
          {
            label: t('roles.organization'),
            cell: (role) => (role.org_id ? nameOf(role.org_id) : t('roles.global')),
          },
          {
            label: t('roles.permissions'),
            cell: (role) => t('roles.permission_count', { count: role.permissions.length }),
          },
          {
            label: t('common.actions'),
            cell: (role) => (
              <RowActions
                actions={[
                  {
                    label: t('roles.edit_one', { name: role.name }),
                    text: t('common.edit'),
                    onClick: () => setEditing(role),
                    allowed: can('role:update'),
                  },
                  {
                    label: t('roles.delete_one', { name: role.name }),
                    text: t('common.delete'),
                    onClick: () => setDeleting(role),
                    danger: true,
                    allowed: can('role:delete') && !role.is_system,
                  },
                ]}
              />
            ),
          },
        ]}
        minWidth={720}
      />
      {editing && <RoleForm role={editing === 'new' ? undefined : editing} onClose={() => setEditing(undefined)} />}
      {deleting && (
        <ConfirmDelete
          title={t('roles.delete_one', { name: deleting.name })}
          text={t('roles.delete_confirm', { name: deleting.name })}
          remove={() => trpcClient.roles.delete.mutate({ id: deleting.id })}
          changed={trpc.roles.pathFilter()}
          onClose={() => setDeleting(undefined)}
        />
      )}
    </>
  );
}
