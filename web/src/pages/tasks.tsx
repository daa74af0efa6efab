import { Alert, Badge, Group, Progress, Select, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { inferRouterOutputs } from '@trpc/server';
import { useSubscription } from '@trpc/tanstack-react-query';
import type { AppRouter } from 'console-admin/client';
import { useState } from 'react';
import { messageOf, useTRPC } from '../api.ts';
import { formatTime } from '../format.ts';
import { useI18n } from '../i18n/index.tsx';

type TaskPage = inferRouterOutputs<AppRouter>['tasks']['list'];
type Task = TaskPage['data'][number];
const STATUSES = ['pending', 'running', 'success', 'failed', 'cancelled'] as const;
const COLORS: Record<Task['status'], string> = {
  pending: 'gray',
  running: 'blue',
  success: 'green',
  failed: 'red',
  cancelled: 'yellow',
};
// The API pages tasks without a status filter; the newest page is filtered here.
const INPUT = { page_size: 100 };

/** The page with one task as an event says it is now: in place, or first when it is new. */
function withTask(page: TaskPage | undefined, task: Task): TaskPage | undefined {
  if (!page) return page;
  const at = page.data.findIndex((t) => t.id === task.id);
  if (at === -1) return { ...page, data: [task, ...page.data].slice(0, page.page_size), total: page.total + 1 };
  return { ...page, data: page.data.map((t, i) => (i === at ? task : t)) };
}

export function Component() {
  const { t, language } = useI18n();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const [status, setStatus] = useState<string>('all');
  const list = useQuery(trpc.tasks.list.queryOptions(INPUT));
  // Live: every change of a visible task arrives on the subscription; the list is never asked again for it.
  const live = useSubscription(
    trpc.tasks.events.subscriptionOptions(undefined, {
      onData: ({ data }) => queries.setQueryData(trpc.tasks.list.queryKey(INPUT), (page) => withTask(page, data.task)),
    }),
  );
  const shown = list.data?.data.filter((task) => status === 'all' || task.status === status) ?? [];

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{t('tasks.title')}</Title>
        <Badge variant="dot" color={live.status === 'pending' ? 'green' : 'gray'}>
          {t(live.status === 'pending' ? 'tasks.live' : 'tasks.offline')}
        </Badge>
      </Group>
      <Select
        label={t('tasks.filter')}
        data={[{ value: 'all', label: t('tasks.all') }, ...STATUSES.map((s) => ({ value: s, label: t(`task.${s}`) }))]}
        value={status}
        onChange={(value) => setStatus(value ?? 'all')}
        allowDeselect={false}
        maw={240}
      />
      {list.error && (
        <Alert color="red" role="alert">
          {messageOf(list.error)}
        </Alert>
      )}
      <Table.ScrollContainer minWidth={600}>
        <Table striped>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>{t('tasks.type')}</Table.Th>
              <Table.Th>{t('tasks.status')}</Table.Th>
              <Table.Th>{t('tasks.progress')}</Table.Th>
              <Table.Th>{t('tasks.created')}</Table.Th>
              <Table.Th>{t('tasks.finished')}</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {shown.map((task) => (
              <Table.Tr key={task.id} data-task-id={task.id}>
                <Table.Td>{task.type}</Table.Td>
                <Table.Td>
                  <Badge variant="dot" color={COLORS[task.status]}>
                    {t(`task.${task.status}`)}
                  </Badge>
                </Table.Td>
                <Table.Td miw={140}>
                  <Group gap="xs" wrap="nowrap">
                    <Progress value={task.progress} flex={1} aria-label={t('tasks.progress_of', { name: task.type })} />
                    <Text size="sm">{task.progress}%</Text>
                  </Group>
                </Table.Td>
                <Table.Td>{formatTime(task.created_at, language)}</Table.Td>
                <Table.Td>{formatTime(task.finished_at, language)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {list.data && shown.length === 0 && <Text c="dimmed">{t('common.empty')}</Text>}
    </Stack>
  );
}
