import { Alert, Anchor, Badge, Button, Code, Group, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { messageOf, useTRPC } from '../api.ts';
import { ConfirmDelete } from '../dialog.tsx';
import { formatTime } from '../format.ts';
import { useI18n } from '../i18n/index.tsx';
import { notify } from '../notify.ts';
import { useCan } from '../permissions.tsx';
import { ArtifactDownload } from '../tasks/artifact-download.tsx';
import { TaskProgress } from '../tasks/task-progress.tsx';
import { useLiveTask, type Task } from '../tasks/live-task.ts';
import { STATUS_COLORS } from '../tasks/status-colors.ts';

const LOG_INPUT = { page_size: 100 };

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Stack gap={2}>
      <Text size="sm" c="dimmed">
        {label}
      </Text>
      <Text component="div">{children}</Text>
    </Stack>
  );
}

function DeleteTask({ task, onClose }: { task: Task; onClose: () => void }) {
  const { t } = useI18n();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const navigate = useNavigate();
  const remove = useMutation(
    trpc.tasks.delete.mutationOptions({
      onSuccess: () => {
        void queries.invalidateQueries(trpc.tasks.list.pathFilter());
        notify(t('common.deleted'), t('common.close'));
        void navigate('/tasks');
      },
    }),
  );
  return (
    <ConfirmDelete
      title={t('task.delete_title')}
      text={t('task.delete_confirm', { name: task.type })}
      pending={remove.isPending}
      error={remove.error}
      onConfirm={() => remove.mutate({ id: task.id })}
      onClose={onClose}
    />
  );
}

function Actions({ task, keep }: { task: Task; keep: (task: Task) => void }) {
  const { t } = useI18n();
  const can = useCan();
  const trpc = useTRPC();
  const [deleting, setDeleting] = useState(false);
  const cancel = useMutation(trpc.tasks.cancel.mutationOptions({ onSuccess: keep }));
  const retry = useMutation(trpc.tasks.retry.mutationOptions({ onSuccess: keep }));
  const error = cancel.error ?? retry.error;
  const active = task.status === 'pending' || task.status === 'running';
  return (
    <Stack gap="xs">
      <Group gap="xs">
        {can('task:cancel') && active && (
          <Button variant="default" loading={cancel.isPending} onClick={() => cancel.mutate({ id: task.id })}>
            {t('task.cancel')}
          </Button>
        )}
        {can('task:retry') && (task.status === 'failed' || task.status === 'cancelled') && (
          <Button variant="default" loading={retry.isPending} onClick={() => retry.mutate({ id: task.id })}>
            {t('task.retry')}
          </Button>
        )}
        {can('task:delete') && (
          <Button variant="default" color="red" onClick={() => setDeleting(true)}>
            {t('common.delete')}
          </Button>
        )}
      </Group>
      {error && (
        <Alert color="red" role="alert">
          {messageOf(error)}
        </Alert>
      )}
      {deleting && <DeleteTask task={task} onClose={() => setDeleting(false)} />}
    </Stack>
  );
}

function Logs({ id }: { id: string }) {
  const { t, language } = useI18n();
  const trpc = useTRPC();
  const logs = useQuery(trpc.tasks.logs.queryOptions({ id, ...LOG_INPUT }));
  return (
    <Stack gap="xs">
      <Title order={3}>{t('task.logs')}</Title>
      {logs.error && (
        <Alert color="red" role="alert">
          {messageOf(logs.error)}
        </Alert>
      )}
      <Table.ScrollContainer minWidth={480}>
        <Table>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>{t('task.log_time')}</Table.Th>
              <Table.Th>{t('task.log_level')}</Table.Th>
              <Table.Th>{t('task.log_message')}</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {logs.data?.data.map((line) => (
              <Table.Tr key={line.id}>
                <Table.Td>{formatTime(line.created_at, language)}</Table.Td>
                <Table.Td>
                  <Badge variant="default">{line.level}</Badge>
                </Table.Td>
                <Table.Td>{line.message}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {logs.data?.data.length === 0 && <Text c="dimmed">{t('common.empty')}</Text>}
    </Stack>
  );
}

/** One task: its fields and progress as the subscription reports them, its log read again on each change. */
export function Component() {
  const { t, language } = useI18n();
  const { id } = useParams();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const { task, live, keep } = useLiveTask(id, () =>
    queries.invalidateQueries({ queryKey: trpc.tasks.logs.queryKey({ id: id!, ...LOG_INPUT }) }),
  );
  const data = task.data;

  return (
    <Stack>
      <Anchor component={Link} to="/tasks" size="sm">
        {t('task.back')}
      </Anchor>
      <Group justify="space-between">
        <Title order={2}>{data ? t('task.title', { name: data.type }) : t('task.title', { name: '' })}</Title>
        <Badge variant="dot" color={live ? 'green' : 'gray'}>
          {t(live ? 'tasks.live' : 'tasks.offline')}
        </Badge>
      </Group>
      {task.error && (
        <Alert color="red" role="alert">
          {messageOf(task.error)}
        </Alert>
      )}
      {data && (
        <>
          <TaskProgress value={data.progress} label={t('tasks.progress_of', { name: data.type })} />
          <Actions task={data} keep={keep} />
          <Group align="flex-start" gap="xl">
            <Field label={t('tasks.status')}>
              <Badge variant="dot" color={STATUS_COLORS[data.status]}>
                {t(`task.${data.status}`)}
              </Badge>
            </Field>
            <Field label={t('tasks.type')}>{data.type}</Field>
            <Field label={t('task.id')}>{data.id}</Field>
            <Field label={t('task.category')}>{data.category}</Field>
            <Field label={t('tasks.created')}>{formatTime(data.created_at, language)}</Field>
            <Field label={t('task.started')}>{formatTime(data.started_at, language)}</Field>
            <Field label={t('tasks.finished')}>{formatTime(data.finished_at, language)}</Field>
            <Field label={t('task.retries')}>
              {data.retry_count} / {data.max_retries}
            </Field>
            {data.cron_schedule_id && <Field label={t('task.schedule')}>{data.cron_schedule_id}</Field>}
          </Group>
          {data.error && (
            <Alert color="red" title={t('task.error')}>
              {data.error}
            </Alert>
          )}
          {data.result && (
            <Field label={t('task.result')}>
              <Code block>{data.result}</Code>
            </Field>
          )}
          <ArtifactDownload task={data} />
          <Logs id={data.id} />
        </>
      )}
    </Stack>
  );
}
