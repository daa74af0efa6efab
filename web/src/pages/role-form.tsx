import { Alert, Loader, Select } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useTRPC } from '../api.ts';
import { placeError } from '../field-error.ts';
import { FormDialog, NameFields } from '../form-dialog.tsx';
import { useI18n } from '../i18n/index.tsx';
import { useMyOrganizations } from '../my-organizations.ts';
import { notify } from '../notify.ts';
import { useOrgScope } from '../org-scope.ts';
import { useCan } from '../permissions.tsx';
import { PermissionMatrix } from './permission-matrix.tsx';
import type { Role } from './roles.tsx';

const GLOBAL = 'global';

/** Creates a role (global or of one organization) or edits one: name, description and its permission matrix. */
export function RoleForm({ role, onClose }: { role: Role | undefined; onClose: () => void }) {
  const { t } = useI18n();
  const can = useCan();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const { orgs } = useMyOrganizations();
  const scope = useOrgScope();
  const [form, setForm] = useState({
    name: role?.name ?? '',
    description: role?.description ?? '',
    org: role?.org_id ?? scope ?? GLOBAL,
    permissions: role?.permissions ?? [],
  });
  // An organization's role may hold only the codes that act within one organization.
  const catalogue = useQuery(
    trpc.permissions.list.queryOptions(form.org === GLOBAL ? undefined : { scope: 'organization' }),
  );
  const offered = new Set(catalogue.data?.map((p) => p.code));
  // Codes chosen before switching to an organization, which its roles cannot hold, are neither shown nor sent.
  const permissions = form.permissions.filter((code) => offered.has(code));
  const done = () => {
    void queries.invalidateQueries(trpc.roles.pathFilter());
    notify(t('common.saved'), t('common.close'));
    onClose();
  };
  const create = useMutation(trpc.roles.create.mutationOptions({ onSuccess: done }));
  const update = useMutation(trpc.roles.update.mutationOptions({ onSuccess: done }));
  const error = placeError(create.error ?? update.error, ['name', 'description', 'permissions', 'org_id']);

  const submit = () => {
    const { name, description, org } = form;
    if (role) update.mutate({ id: role.id, name, description, permissions });
    else create.mutate({ name, description, permissions, org_id: org === GLOBAL ? null : org });
  };

  return (
    <FormDialog
      title={role ? t('roles.edit_one', { name: role.name }) : t('roles.create')}
      size="xl"
      error={error.general}
      submitLabel={role ? t('common.save') : t('roles.create')}
      pending={create.isPending || update.isPending}
      onSubmit={submit}
      onClose={onClose}
    >
      <NameFields
        labels={{ name: t('roles.name'), description: t('roles.description') }}
        value={form}
        onChange={(named) => setForm({ ...form, ...named })}
        error={error}
      />
      <Select
        label={t('roles.organization')}
        description={t('roles.organization_hint')}
        data={[{ value: GLOBAL, label: t('roles.global') }, ...orgs.map((o) => ({ value: o.id, label: o.name }))]}
        value={form.org}
        disabled={Boolean(role)}
        error={error.at('org_id')}
        allowDeselect={false}
        searchable
        onChange={(org) => org && setForm({ ...form, org })}
        comboboxProps={{ withinPortal: true }}
      />
      {error.at('permissions') && (
        <Alert color="red" role="alert">
          {error.at('permissions')}
        </Alert>
      )}
      {catalogue.error && (
        <Alert color="red" role="alert">
          {messageOf(catalogue.error)}
        </Alert>
      )}
      {catalogue.data ? (
        <PermissionMatrix
          permissions={catalogue.data}
          value={permissions}
          onChange={(chosen) => setForm({ ...form, permissions: chosen })}
          grantable={can}
        />
      ) : (
        !catalogue.error && <Loader aria-label={t('app.loading')} />
      )}
    </FormDialog>
  );
}
