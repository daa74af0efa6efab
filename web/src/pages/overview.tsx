import { Badge, Card, Group, Progress, Stack, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { useTRPC } from '../api.ts';
import { formatTime } from '../format.ts';
import { useI18n } from '../i18n/index.tsx';
import type { MessageKey } from '../i18n/en.ts';
import { useSharedLiveTasks, type LiveTask } from '../live-tasks.ts';
import { useCan, useMe } from '../permissions.tsx';
import { AuditTable } from './audit-table.tsx';

const SHOWN = 5;

function Count({ label, value }: { label: MessageKey; value: number | undefined }) {
  const { t } = useI18n();
  return (
    <Card withBorder padding="sm" miw={140} role="group" aria-label={t(label)}>
      <Text size="sm" c="dimmed">
        {t(label)}
      </Text>
      <Text size="xl" fw={700} data-count>
        {value ?? '—'}
      </Text>
    </Card>
  );
}

function Counts() {
  const can = useCan();
  const trpc = useTRPC();
  const users = useQuery({ ...trpc.users.list.queryOptions({ page_size: 1 }), enabled: can('user:list') });
  const tasks = useQuery({ ...trpc.tasks.counts.queryOptions(), enabled: can('task:list') });
  return (
    <Group gap="sm">
      {can('user:list') && <Count label="overview.users" value={users.data?.total} />}
      {can('task:list') && (
        <>
          <Count label="overview.tasks_running" value={tasks.data?.running} />
          <Count label="overview.tasks_pending" value={tasks.data?.pending} />
          <Count label="overview.tasks_failed" value={tasks.data?.failed} />
        </>
      )}
    </Group>
  );
}

function RecentAudit() {
  const { t } = useI18n();
  const trpc = useTRPC();
  const recent = useQuery(trpc.audit.list.queryOptions({ page_size: SHOWN }));
  return (
    <Stack gap="xs">
      <Title order={3}>{t('overview.recent_audit')}</Title>
      <AuditTable records={recent.data?.data ?? []} />
    </Stack>
  );
}

/** The newest task changes as they arrive; a change of a task's status also has the counts read again. */
function LiveActivity() {
  const { t } = useI18n();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const { tasks } = useSharedLiveTasks();
  const statuses = tasks.map((task) => `${task.id}:${task.status}`).join();
  useEffect(() => {
    if (statuses) void queries.invalidateQueries(trpc.tasks.counts.queryFilter());
  }, [statuses, queries, trpc]);
  const newest = [...tasks].sort((a, b) => b.updated_at.localeCompare(a.updated_at)).slice(0, SHOWN);
  return (
    <Stack gap="xs">
      <Title order={3}>{t('overview.live_tasks')}</Title>
      {newest.length === 0 && <Text c="dimmed">{t('overview.no_activity')}</Text>}
      {newest.map((task: LiveTask) => (
        <Group key={task.id} gap="sm" wrap="nowrap" data-task-id={task.id}>
          <Text size="sm" miw={0} flex={1} truncate>
            {task.type}
          </Text>
          <Badge variant="dot" color={task.status === 'failed' ? 'red' : 'blue'}>
            {t(`task.${task.status}`)}
          </Badge>
          <Progress value={task.progress} w={80} aria-label={t('tasks.progress_of', { name: task.type })} />
        </Group>
      ))}
    </Stack>
  );
}

export function Component() {
  const { t } = useI18n();
  const me = useMe();
  const can = useCan();
  return (
    <Stack>
      <Title order={2}>{t('overview.welcome', { name: me.full_name || me.username })}</Title>
      {!['user:list', 'task:list', 'audit_log:list'].some(can) && <Text>{t('overview.text')}</Text>}
      <Counts />
      {can('task:list') && <LiveActivity />}
      {can('audit_log:list') && <RecentAudit />}
    </Stack>
  );
}
