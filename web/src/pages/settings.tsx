import { Alert, NumberInput, PasswordInput, Select, Stack, Switch, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from 'console-admin/client';
import { useState, type FormEvent } from 'react';
import { messageOf, useTRPC } from '../api.ts';
import { placeError } from '../field-error.ts';
import { Refused } from '../refused.tsx';
import { useI18n } from '../i18n/index.tsx';
import { notify } from '../notify.ts';
import { useCan, useMe } from '../permissions.tsx';
import { SubmitRow } from '../submit-row.tsx';
import { SmtpSettings } from './smtp-settings.tsx';

type Definition = inferRouterOutputs<AppRouter>['settings']['definitions'][number];

interface FieldProps {
  def: Definition;
  value: string;
  error: string | undefined;
  disabled: boolean;
  onChange: (value: string) => void;
}

/** One setting's input, chosen by its type; a secret's is empty (never shown back) until a new value is typed. */
function SettingField({ def, value, error, disabled, onChange }: FieldProps) {
  const { t } = useI18n();
  const common = { label: def.key, description: def.description, error, disabled };
  if (def.type === 'boolean')
    return (
      <Switch {...common} checked={value === 'true'} onChange={(e) => onChange(String(e.currentTarget.checked))} />
    );
  if (def.type === 'enum')
    return (
      <Select
        {...common}
        data={def.values ?? []}
        value={value}
        onChange={(v) => v && onChange(v)}
        allowDeselect={false}
      />
    );
  if (def.secret)
    return (
      <PasswordInput
        {...common}
        value={value}
        placeholder={t('settings.secret_placeholder')}
        autoComplete="new-password"
        onChange={(e) => onChange(e.currentTarget.value)}
      />
    );
  if (def.type === 'integer')
    // No clamping: a value out of range goes to the service, whose refusal is shown at the field.
    return (
      <NumberInput
        {...common}
        value={value}
        min={def.min ?? undefined}
        max={def.max ?? undefined}
        allowDecimal={false}
        clampBehavior="none"
        onChange={(v) => onChange(String(v))}
      />
    );
  return <TextInput {...common} value={value} onChange={(e) => onChange(e.currentTarget.value)} />;
}

function SettingsForm({ definitions, saved }: { definitions: Definition[]; saved: Record<string, string> }) {
  const { t } = useI18n();
  const can = useCan();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const editable = can('system:settings:update');
  // Secrets start empty: only a typed value is sent.
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(definitions.map((d) => [d.key, d.secret ? '' : (saved[d.key] ?? d.default ?? '')])),
  );
  const update = useMutation(
    trpc.settings.update.mutationOptions({
      onSuccess: (map) => {
        queries.setQueryData(trpc.settings.get.queryKey(), map);
        setValues((now) => Object.fromEntries(Object.keys(now).map((k) => [k, map[k] ?? ''])));
        notify(t('settings.saved'), t('common.close'));
      },
    }),
  );
  const refusal = placeError(
    update.error,
    definitions.map((d) => d.key),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const changed = definitions.filter((d) => (d.secret ? values[d.key] !== '' : values[d.key] !== saved[d.key]));
    update.mutate(Object.fromEntries(changed.map((d) => [d.key, values[d.key]!])));
  };
  return (
    <form onSubmit={submit} noValidate>
      <Stack maw={560}>
        {!editable && <Alert color="gray">{t('settings.read_only')}</Alert>}
        <Refused message={refusal.general} />
        {definitions.map((def) => (
          <SettingField
            key={def.key}
            def={def}
            value={values[def.key] ?? ''}
            error={refusal.at(def.key)}
            disabled={!editable}
            onChange={(value) => setValues((now) => ({ ...now, [def.key]: value }))}
          />
        ))}
        {editable && <SubmitRow label={t('common.save')} pending={update.isPending} />}
      </Stack>
    </form>
  );
}

export function Component() {
  const { t } = useI18n();
  const me = useMe();
  const trpc = useTRPC();
  const definitions = useQuery(trpc.settings.definitions.queryOptions());
  const saved = useQuery(trpc.settings.get.queryOptions());
  const error = definitions.error ?? saved.error;
  const isAdmin = me.roles.some((r) => r.name === 'admin');
  return (
    <Stack>
      <Title order={2}>{t('settings.title')}</Title>
      {error && (
        <Alert color="red" role="alert">
          {messageOf(error)}
        </Alert>
      )}
      {definitions.data && saved.data && <SettingsForm definitions={definitions.data} saved={saved.data} />}
      {isAdmin && <SmtpSettings />}
    </Stack>
  );
}
