import { Autocomplete, Button, Group, Select, Stack, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import type { inferRouterInputs } from '@trpc/server';
import type { AppRouter } from 'console-admin/client';
import { useSearchParams } from 'react-router';
import { useTRPC } from '../api.ts';
import { placeError } from '../field-error.ts';
import { PageNav } from '../list-controls.tsx';
import { Refused } from '../refused.tsx';
import { useI18n } from '../i18n/index.tsx';
import { useCan } from '../permissions.tsx';
import { AuditChainStatus } from './audit-chain-status.tsx';
import { AuditTable } from './audit-table.tsx';

type ListInput = inferRouterInputs<AppRouter>['audit']['list'];

const PAGE_SIZE = 20;
// The filters as the API names them; the query string carries them in these words, so a link says what it shows.
const FILTERS = ['user_id', 'action', 'resource_type', 'start_time', 'end_time'] as const;
type Filter = (typeof FILTERS)[number];
// Suggestions only: the fields take any value, as the API does.
const ACTIONS = [
  'create',
  'update',
  'delete',
  'login',
  'login_failed',
  'logout',
  'password_change',
  'export',
  'verify',
];
const RESOURCES = ['user', 'role', 'organization', 'setting', 'smtp', 'task', 'schedule', 'session', 'audit_log'];

/** `datetime-local` shows local time without a zone; the URL and the API carry ISO 8601. */
const pad = (n: number) => String(n).padStart(2, '0');
function localOf(iso: string | null): string {
  const d = iso ? new Date(iso) : undefined;
  if (!d || Number.isNaN(d.getTime())) return '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
const isoOf = (local: string) => (local ? new Date(local).toISOString() : '');

function inputOf(query: string): ListInput {
  const params = new URLSearchParams(query);
  const input: ListInput = { current: Math.max(1, Number(params.get('page')) || 1), page_size: PAGE_SIZE };
  for (const name of FILTERS) {
    const value = params.get(name);
    if (value) input[name] = value;
  }
  return input;
}

function UserFilter({ value, onChange }: { value: string | null; onChange: (id: string) => void }) {
  const { t } = useI18n();
  const trpc = useTRPC();
  const users = useQuery(trpc.users.list.queryOptions({ page_size: 100 }));
  return (
    <Select
      label={t('audit.user')}
      searchable
      clearable
      data={users.data?.data.map((u) => ({ value: u.id, label: u.username })) ?? []}
      value={value}
      onChange={(id) => onChange(id ?? '')}
      comboboxProps={{ withinPortal: true }}
      clearButtonProps={{ 'aria-label': t('audit.clear') }}
    />
  );
}

export function Component() {
  const { t } = useI18n();
  const can = useCan();
  const trpc = useTRPC();
  const [params, setParams] = useSearchParams();
  const [query] = useDebouncedValue(params.toString(), 300);
  const input = inputOf(query);
  const list = useQuery({ ...trpc.audit.list.queryOptions(input), placeholderData: keepPreviousData });
  const refusal = placeError(list.error, FILTERS);
  const errorOf = refusal.at;

  // Each change of a filter goes back to the first page, and replaces the address rather than adding history.
  const setFilter = (name: Filter, value: string) =>
    setParams(
      (now) => {
        const next = new URLSearchParams(now);
        if (value) next.set(name, value);
        else next.delete(name);
        next.delete('page');
        return next;
      },
      { replace: true },
    );
  const setPage = (page: number) =>
    setParams((now) => {
      const next = new URLSearchParams(now);
      next.set('page', String(page));
      return next;
    });
  const text = (name: Filter) => ({
    value: params.get(name) ?? '',
    error: errorOf(name),
    onChange: (value: string) => setFilter(name, value.trim()),
  });
  const time = (name: 'start_time' | 'end_time') => ({
    type: 'datetime-local',
    value: localOf(params.get(name)),
    error: errorOf(name),
    onChange: (e: { currentTarget: { value: string } }) => setFilter(name, isoOf(e.currentTarget.value)),
  });

  return (
    <Stack>
      <Title order={2}>{t('audit.title')}</Title>
      {can('audit_log:verify') && <AuditChainStatus />}
      <Group align="flex-end" gap="sm" role="search" aria-label={t('audit.filters')}>
        {can('user:list') && <UserFilter value={params.get('user_id')} onChange={(id) => setFilter('user_id', id)} />}
        <Autocomplete label={t('audit.action')} data={ACTIONS} {...text('action')} />
        <Autocomplete label={t('audit.resource_type')} data={RESOURCES} {...text('resource_type')} />
        <TextInput label={t('audit.start_time')} {...time('start_time')} />
        <TextInput label={t('audit.end_time')} {...time('end_time')} />
        <Button variant="default" onClick={() => setParams(new URLSearchParams(), { replace: true })}>
          {t('audit.clear')}
        </Button>
      </Group>
      <Refused message={refusal.general} />
      <AuditTable records={list.data?.data ?? []} />
      {list.data?.data.length === 0 && <Text c="dimmed">{t('common.empty')}</Text>}
      <PageNav total={list.data?.total ?? 0} pageSize={PAGE_SIZE} page={input.current ?? 1} onChange={setPage} />
    </Stack>
  );
}
