import { Badge, Button } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { trpcClient, useTRPC } from '../api.ts';
import { ConfirmDelete } from '../confirm-delete.tsx';
import { formatTime } from '../format.ts';
import { JUST_READ_MS, readFirst, trpcOptions } from '../first-page.ts';
import { useI18n } from '../i18n/index.tsx';
import { ListPage, RowActions, usePagedSearch } from '../list-controls.tsx';
import type { Organization } from '../my-organizations.ts';
import { useCan } from '../permissions.tsx';
import { OrganizationForm } from './organization-form.tsx';
import { OrganizationMembers } from './organization-members.tsx';

const PAGE_SIZE = 20;

export const loader = readFirst(
  'org:list',
  trpcOptions.organizations.list.queryOptions({ current: 1, page_size: PAGE_SIZE }),
);

export function Component() {
  const { t, language } = useI18n();
  const can = useCan();
  const trpc = useTRPC();
  const paged = usePagedSearch();
  const [editing, setEditing] = useState<Organization | 'new' | undefined>();
  const [members, setMembers] = useState<Organization | undefined>();
  const [deleting, setDeleting] = useState<Organization | undefined>();
  const list = useQuery({
    ...trpc.organizations.list.queryOptions({ ...paged.query, page_size: PAGE_SIZE }),
    placeholderData: keepPreviousData,
    staleTime: JUST_READ_MS,
  });

  return (
    <>
      <ListPage
        title={t('orgs.title')}
        create={can('org:create') && <Button onClick={() => setEditing('new')}>{t('orgs.create')}</Button>}
        search={paged}
        error={list.error}
        page={list.data}
        pageSize={PAGE_SIZE}
        columns={[
          { label: t('orgs.name'), cell: (org) => org.name },
          { label: t('orgs.description'), cell: (org) => org.description },
          {
            label: t('orgs.status'),
            cell: (org) => (
              <Badge variant="dot" color={org.status === 'active' ? 'green' : 'gray'}>
                {t(`status.${org.status}`)}
              </Badge>
            ),
          },
          { label: t('orgs.created'), cell: (org) => formatTime(org.created_at, language) },
          {
            label: t('common.actions'),
            cell: (org) => (
              <RowActions
                actions={[
                  {
                    label: t('orgs.members_of', { name: org.name }),
                    text: t('orgs.members'),
                    onClick: () => setMembers(org),
                    allowed: can('org:view'),
                  },
                  {
                    label: t('orgs.edit_one', { name: org.name }),
                    text: t('common.edit'),
                    onClick: () => setEditing(org),
                    allowed: can('org:update'),
                  },
                  {
                    label: t('orgs.delete_one', { name: org.name }),
                    text: t('common.delete'),
                    onClick: () => setDeleting(org),
                    danger: true,
                    allowed: can('org:delete'),
                  },
                ]}
              />
            ),
          },
        ]}
        minWidth={720}
      />
      {editing && (
        <OrganizationForm org={editing === 'new' ? undefined : editing} onClose={() => setEditing(undefined)} />
      )}
      {members && <OrganizationMembers org={members} onClose={() => setMembers(undefined)} />}
      {deleting && (
        <ConfirmDelete
          title={t('orgs.delete_one', { name: deleting.name })}
          text={t('orgs.delete_confirm', { name: deleting.name })}
          remove={() => trpcClient.organizations.delete.mutate({ id: deleting.id })}
          changed={trpc.organizations.pathFilter()}
          onClose={() => setDeleting(undefined)}
        />
      )}
    </>
  );
}
