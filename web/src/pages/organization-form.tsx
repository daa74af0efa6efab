import { Select } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useTRPC } from '../api.ts';
import { placeError } from '../field-error.ts';
import { FormDialog, NameFields } from '../form-dialog.tsx';
import { useI18n } from '../i18n/index.tsx';
import type { Organization } from '../my-organizations.ts';
import { notify } from '../notify.ts';

/** Creates an organization (no `org`) or edits one: name, description and whether it is active. */
export function OrganizationForm({ org, onClose }: { org: Organization | undefined; onClose: () => void }) {
  const { t } = useI18n();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const [form, setForm] = useState({
    name: org?.name ?? '',
    description: org?.description ?? '',
    status: org?.status ?? 'active',
  });
  const done = () => {
    void queries.invalidateQueries(trpc.organizations.pathFilter());
    notify(t('common.saved'), t('common.close'));
    onClose();
  };
  const create = useMutation(trpc.organizations.create.mutationOptions({ onSuccess: done }));
  const update = useMutation(trpc.organizations.update.mutationOptions({ onSuccess: done }));
  const error = placeError(create.error ?? update.error, ['name', 'description', 'status']);

  return (
    <FormDialog
      title={org ? t('orgs.edit_one', { name: org.name }) : t('orgs.create')}
      error={error.general}
      submitLabel={org ? t('common.save') : t('orgs.create')}
      pending={create.isPending || update.isPending}
      onSubmit={() => (org ? update.mutate({ id: org.id, ...form }) : create.mutate(form))}
      onClose={onClose}
    >
      <NameFields
        labels={{ name: t('orgs.name'), description: t('orgs.description') }}
        value={form}
        onChange={(named) => setForm({ ...form, ...named })}
        error={error}
      />
      <Select
        label={t('orgs.status')}
        data={[
          { value: 'active', label: t('status.active') },
          { value: 'disabled', label: t('status.disabled') },
        ]}
        value={form.status}
        error={error.at('status')}
        onChange={(status) => status && setForm({ ...form, status: status as Organization['status'] })}
        allowDeselect={false}
        comboboxProps={{ withinPortal: true }}
      />
    </FormDialog>
  );
}
