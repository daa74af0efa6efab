import { Alert, Button, Group, MultiSelect, Select, Stack, Table, Text, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { messageOf, useTRPC } from '../api.ts';
import { placeError } from '../field-error.ts';
import { Dialog } from '../form-dialog.tsx';
import { formatTime } from '../format.ts';
import { useI18n } from '../i18n/index.tsx';
import type { Organization } from '../my-organizations.ts';
import { RowActions } from '../list-controls.tsx';
import { notify } from '../notify.ts';
import { useCan } from '../permissions.tsx';

/** Who is chosen in the member form: a new member (picked from the users) or one whose roles change. */
type Choice = { user_id: string; username?: string; role_ids: string[] };

/** An organization's members and their roles in it; adding a member, changing their roles, removing them. */
export function OrganizationMembers({ org, onClose }: { org: Organization; onClose: () => void }) {
  const { t, language } = useI18n();
  const can = useCan();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const manage = can('org:member:update');
  const detail = useQuery(trpc.organizations.get.queryOptions({ id: org.id }));
  const roles = useQuery({
    ...trpc.roles.list.queryOptions({ org_id: org.id, page_size: 100 }),
    enabled: manage && can('role:list'),
  });
  const [userSearch, setUserSearch] = useState('');
  const [userTerm] = useDebouncedValue(userSearch.trim(), 300);
  const users = useQuery({
    ...trpc.users.list.queryOptions({ page_size: 20, ...(userTerm ? { search: userTerm } : {}) }),
    enabled: manage && can('user:list'),
  });
  const [choice, setChoice] = useState<Choice>({ user_id: '', role_ids: [] });
  const changed = () => {
    void queries.invalidateQueries(trpc.organizations.pathFilter());
    notify(t('common.saved'), t('common.close'));
    setChoice({ user_id: '', role_ids: [] });
  };
  const save = useMutation(trpc.organizations.setMember.mutationOptions({ onSuccess: changed }));
  const remove = useMutation(trpc.organizations.removeMember.mutationOptions({ onSuccess: changed }));
  const error = placeError(save.error, ['user_id', 'role_ids']);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate({ id: org.id, user_id: choice.user_id, role_ids: choice.role_ids });
  };
  const members = detail.data?.members ?? [];
  const editing = choice.username !== undefined;

  return (
    <Dialog title={t('orgs.members_of', { name: org.name })} size="xl" onClose={onClose}>
      <Stack>
        {(detail.error ?? remove.error) && (
          <Alert color="red" role="alert">
            {messageOf(detail.error ?? remove.error)}
          </Alert>
        )}
        <Table.ScrollContainer minWidth={520}>
          <Table striped>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t('orgs.member')}</Table.Th>
                <Table.Th>{t('orgs.member_roles')}</Table.Th>
                <Table.Th>{t('orgs.member_since')}</Table.Th>
                {manage && <Table.Th>{t('common.actions')}</Table.Th>}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {members.map((m) => (
                <Table.Tr key={m.user_id}>
                  <Table.Td>{m.username}</Table.Td>
                  <Table.Td>{m.roles.map((r) => r.name).join(', ')}</Table.Td>
                  <Table.Td>{formatTime(m.created_at, language)}</Table.Td>
                  {manage && (
                    <Table.Td>
                      <RowActions
                        actions={[
                          {
                            label: t('orgs.edit_member', { name: m.username }),
                            text: t('common.edit'),
                            onClick: () =>
                              setChoice({
                                user_id: m.user_id,
                                username: m.username,
                                role_ids: m.roles.map((r) => r.id),
                              }),
                            allowed: true,
                          },
                          {
                            label: t('orgs.remove_member', { name: m.username }),
                            text: t('orgs.remove'),
                            onClick: () => remove.mutate({ id: org.id, userId: m.user_id }),
                            danger: true,
                            allowed: true,
                          },
                        ]}
                      />
                    </Table.Td>
                  )}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {detail.data && members.length === 0 && <Text c="dimmed">{t('orgs.no_members')}</Text>}
        {manage && (
          <form onSubmit={submit} noValidate>
            <Stack gap="sm">
              <Title order={3} size="h5">
                {editing ? t('orgs.edit_member', { name: choice.username! }) : t('orgs.add_member')}
              </Title>
              {error.general && (
                <Alert color="red" role="alert">
                  {error.general}
                </Alert>
              )}
              {!editing && (
                <Select
                  label={t('orgs.user')}
                  required
                  searchable
                  data={(users.data?.data ?? [])
                    .filter((u) => !members.some((m) => m.user_id === u.id))
                    .map((u) => ({ value: u.id, label: u.username }))}
                  value={choice.user_id || null}
                  searchValue={userSearch}
                  onSearchChange={setUserSearch}
                  onChange={(id) => setChoice({ ...choice, user_id: id ?? '' })}
                  error={error.at('user_id')}
                  nothingFoundMessage={t('common.empty')}
                  comboboxProps={{ withinPortal: true }}
                />
              )}
              <MultiSelect
                label={t('orgs.member_roles')}
                data={(roles.data?.data ?? []).map((r) => ({ value: r.id, label: r.name }))}
                value={choice.role_ids}
                onChange={(role_ids) => setChoice({ ...choice, role_ids })}
                error={error.at('role_ids')}
                comboboxProps={{ withinPortal: true }}
              />
              <Group justify="flex-end">
                {editing && (
                  <Button variant="default" onClick={() => setChoice({ user_id: '', role_ids: [] })}>
                    {t('common.cancel')}
                  </Button>
                )}
                <Button type="submit" loading={save.isPending}>
                  {editing ? t('orgs.save_member') : t('orgs.add_member')}
                </Button>
              </Group>
            </Stack>
          </form>
        )}
      </Stack>
    </Dialog>
  );
}
