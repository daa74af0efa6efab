import { Alert, Anchor, Autocomplete, Badge, Group, Progress, Select, Stack, Text, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import type { inferRouterOutputs } from '@trpc/server';
import { useSubscription } from '@trpc/tanstack-react-query';
import type { AppRouter } from 'console-admin/client';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { messageOf, useTRPC } from '../api.ts';
import { ColumnTable } from '../column-table.tsx';
import { formatTime } from '../format.ts';
import { JUST_READ_MS, readFirst, trpcOptions } from '../first-page.ts';
import { useI18n } from '../i18n/index.tsx';
import { STATUS_COLORS } from '../tasks/status-colors.ts';

type TaskPage = inferRouterOutputs<AppRouter>['tasks']['list'];
type Task = TaskPage['data'][number];
const STATUSES = ['pending', 'running', 'success', 'failed', 'cancelled'] as const;
type Filter = { status?: Task['status']; type?: string };

const PAGE_SIZE = 100;

export const loader = readFirst('task:list', trpcOptions.tasks.list.queryOptions({ page_size: PAGE_SIZE }));

const matches = (task: Task, f: Filter) => (!f.status || task.status === f.status) && (!f.type || task.type === f.type);

/**
 * The page with one task as an event says it is now: in place, first when it is new, gone when it no longer
 * matches the filter the page was read with.
 */
function withTask(page: TaskPage | undefined, task: Task, f: Filter): TaskPage | undefined {
  if (!page) return page;
  const at = page.data.findIndex((t) => t.id === task.id);
  if (!matches(task, f))
    return at === -1 ? page : { ...page, data: page.data.filter((t) => t.id !== task.id), total: page.total - 1 };
  if (at === -1) return { ...page, data: [task, ...page.data].slice(0, page.page_size), total: page.total + 1 };
  return { ...page, data: page.data.map((t, i) => (i === at ? task : t)) };
}

export function Component() {
  const { t, language } = useI18n();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const [status, setStatus] = useState<string>('all');
  const [typeText, setTypeText] = useState('');
  const [type] = useDebouncedValue(typeText.trim(), 300);
  // The types offered are those seen on this page, so far.
  const [types, setTypes] = useState<string[]>([]);
  const filter: Filter = {
    ...(status !== 'all' ? { status: status as Task['status'] } : {}),
    ...(type ? { type } : {}),
  };
  const input = { page_size: PAGE_SIZE, ...filter };
  const list = useQuery({
    ...trpc.tasks.list.queryOptions(input),
    placeholderData: keepPreviousData,
    staleTime: JUST_READ_MS,
  });
  const seen = (tasks: Task[]) =>
    setTypes((known) => {
      const added = tasks.map((t) => t.type).filter((t, i, all) => !known.includes(t) && all.indexOf(t) === i);
      return added.length ? [...known, ...added].sort() : known;
    });
  useEffect(() => {
    if (list.data) seen(list.data.data);
  }, [list.data]);
  // Live: every change of a visible task arrives on the subscription; the list is never asked again for it.
  const live = useSubscription(
    trpc.tasks.events.subscriptionOptions(undefined, {
      onData: ({ data }) => {
        seen([data.task]);
        queries.setQueryData(trpc.tasks.list.queryKey(input), (page) => withTask(page, data.task, filter));
      },
    }),
  );
  const shown = list.data?.data ?? [];

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{t('tasks.title')}</Title>
        <Badge variant="dot" color={live.status === 'pending' ? 'green' : 'gray'}>
          {t(live.status === 'pending' ? 'tasks.live' : 'tasks.offline')}
        </Badge>
      </Group>
      <Group align="flex-end">
        <Select
          label={t('tasks.filter')}
          data={[
            { value: 'all', label: t('tasks.all') },
            ...STATUSES.map((s) => ({ value: s, label: t(`task.${s}`) })),
          ]}
          value={status}
          onChange={(value) => setStatus(value ?? 'all')}
          allowDeselect={false}
          maw={240}
        />
        <Autocomplete label={t('tasks.type_filter')} data={types} value={typeText} onChange={setTypeText} maw={240} />
      </Group>
      {list.error && (
        <Alert color="red" role="alert">
          {messageOf(list.error)}
        </Alert>
      )}
      <ColumnTable
        columns={[
          {
            label: t('tasks.type'),
            cell: (task) => (
              <Anchor component={Link} to={`/tasks/${task.id}`}>
                {task.type}
              </Anchor>
            ),
          },
          {
            label: t('tasks.status'),
            cell: (task) => (
              <Badge variant="dot" color={STATUS_COLORS[task.status]}>
                {t(`task.${task.status}`)}
              </Badge>
            ),
          },
          {
            label: t('tasks.progress'),
            minWidth: 140,
            cell: (task) => (
              <Group gap="xs" wrap="nowrap">
                <Progress value={task.progress} flex={1} aria-label={t('tasks.progress_of', { name: task.type })} />
                <Text size="sm">{task.progress}%</Text>
              </Group>
            ),
          },
          { label: t('tasks.created'), cell: (task) => formatTime(task.created_at, language) },
          { label: t('tasks.finished'), cell: (task) => formatTime(task.finished_at, language) },
        ]}
        rows={shown}
        minWidth={600}
        idAttribute="data-task-id"
      />
      {list.data && shown.length === 0 && <Text c="dimmed">{t('common.empty')}</Text>}
    </Stack>
  );
}
