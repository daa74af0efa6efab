import { Alert, Button, Group, Pagination, Stack, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useState, type ReactNode } from 'react';
import { messageOf } from './api.ts';
import { ColumnTable, type Column } from './column-table.tsx';
import { useI18n } from './i18n/index.tsx';

/** A list page's search box and page number: a new search starts again at page 1. */
export function usePagedSearch() {
  const [search, setSearch] = useState('');
  const [term] = useDebouncedValue(search.trim(), 300);
  const [page, setPage] = useState(1);
  const onSearch = (value: string) => {
    setSearch(value);
    setPage(1);
  };
  return { search, onSearch, page, setPage, query: { current: page, ...(term ? { search: term } : {}) } };
}

export function SearchField({ value, onChange }: { value: string; onChange: (value: string) => void }) {
  const { t } = useI18n();
  return (
    <TextInput
      label={t('common.search')}
      type="search"
      value={value}
      onChange={(e) => onChange(e.currentTarget.value)}
      maw={360}
    />
  );
}

/** The pages of a list, shown only when there is more than one. */
export function PageNav(props: { total: number; pageSize: number; page: number; onChange: (page: number) => void }) {
  const { t } = useI18n();
  const pages = Math.max(1, Math.ceil(props.total / props.pageSize));
  if (pages < 2) return null;
  return (
    <Pagination
      total={pages}
      value={props.page}
      onChange={props.onChange}
      aria-label={t('common.pages')}
      getControlProps={(control) => ({ 'aria-label': control })}
      getItemProps={(n) => ({ 'aria-label': String(n), 'aria-current': n === props.page ? 'page' : undefined })}
    />
  );
}

/** A button of a table row; `label` names it with its row (Edit alice), `text` is what it shows (Edit). */
export interface RowAction {
  label: string;
  text: string;
  onClick: () => void;
  danger?: boolean;
  /** Whether the caller may do it: actions follow their permissions. */
  allowed: boolean;
}

export function RowActions({ actions }: { actions: RowAction[] }) {
  return (
    <Group gap="xs" wrap="nowrap">
      {actions
        .filter((a) => a.allowed)
        .map((a) => (
          <Button
            key={a.label}
            size="xs"
            variant="default"
            color={a.danger ? 'red' : undefined}
            aria-label={a.label}
            onClick={a.onClick}
          >
            {a.text}
          </Button>
        ))}
    </Group>
  );
}

/** A list page: its title and create button, the search, the service's error, the table (scrolling in its own box). */
export function ListPage<Row extends { id: string }>(props: {
  title: string;
  create?: ReactNode;
  search: ReturnType<typeof usePagedSearch>;
  error: unknown;
  /** One page of the list; undefined until it is read. */
  page: { data: Row[]; total: number } | undefined;
  pageSize: number;
  columns: Column<Row>[];
  minWidth: number;
}) {
  const { t } = useI18n();
  const { search, page } = props;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{props.title}</Title>
        {props.create}
      </Group>
      <SearchField value={search.search} onChange={search.onSearch} />
      {props.error ? (
        <Alert color="red" role="alert">
          {messageOf(props.error)}
        </Alert>
      ) : null}
      <ColumnTable columns={props.columns} rows={page?.data ?? []} minWidth={props.minWidth} highlightOnHover />
      {page?.data.length === 0 && <Text c="dimmed">{t('common.empty')}</Text>}
      <PageNav total={page?.total ?? 0} pageSize={props.pageSize} page={search.page} onChange={search.setPage} />
    </Stack>
  );
}
