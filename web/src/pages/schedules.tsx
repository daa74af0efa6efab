import { Alert, Badge, Button, Code, Stack, Switch, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useTRPC } from '../api.ts';
import { ColumnTable } from '../column-table.tsx';
import { formatTime } from '../format.ts';
import { useI18n } from '../i18n/index.tsx';
import { notify } from '../notify.ts';
import { useCan } from '../permissions.tsx';

/** The cron schedules defined in code: each one switched on or off, or run once now, by those allowed to. */
export function Component() {
  const { t, language } = useI18n();
  const can = useCan();
  const trpc = useTRPC();
  const queries = useQueryClient();
  const list = useQuery(trpc.schedules.list.queryOptions());
  // Which schedule the last failed action was on, so its message says so.
  const [failedOn, setFailedOn] = useState<string>();
  const toggle = useMutation(
    trpc.schedules.toggle.mutationOptions({
      onMutate: ({ id }) => setFailedOn(id),
      onSuccess: (schedule) =>
        queries.setQueryData(trpc.schedules.list.queryKey(), (all) =>
          all?.map((s) => (s.id === schedule.id ? schedule : s)),
        ),
    }),
  );
  const trigger = useMutation(
    trpc.schedules.trigger.mutationOptions({
      onMutate: ({ id }) => setFailedOn(id),
      onSuccess: (_task, { id }) => {
        void queries.invalidateQueries(trpc.schedules.list.queryFilter());
        const name = list.data?.find((s) => s.id === id)?.name ?? id;
        notify(t('schedules.triggered', { name }), t('common.close'));
      },
    }),
  );
  const error = toggle.error ?? trigger.error;
  const editable = can('task:schedule:update');

  return (
    <Stack>
      <Title order={2}>{t('schedules.title')}</Title>
      {list.error && (
        <Alert color="red" role="alert">
          {messageOf(list.error)}
        </Alert>
      )}
      {error && (
        <Alert color="red" role="alert" title={list.data?.find((s) => s.id === failedOn)?.name}>
          {messageOf(error)}
        </Alert>
      )}
      <ColumnTable
        columns={[
          { label: t('schedules.name'), cell: (s) => s.name },
          {
            label: t('schedules.enabled'),
            cell: (s) => (
              <Switch
                aria-label={s.name}
                checked={s.enabled}
                disabled={!editable || toggle.isPending}
                onChange={(e) => toggle.mutate({ id: s.id, enabled: e.currentTarget.checked })}
              />
            ),
          },
          {
            label: t('schedules.spec'),
            cell: (s) => (
              <>
                <Code>{s.spec}</Code>{' '}
                <Badge variant="light" color="gray">
                  {s.timezone}
                </Badge>
              </>
            ),
          },
          { label: t('schedules.task_type'), cell: (s) => s.task_type },
          {
            label: t('schedules.next_run'),
            cell: (s) => (s.enabled ? formatTime(s.next_run, language) : '—'),
          },
          { label: t('schedules.last_run'), cell: (s) => formatTime(s.last_run, language) },
          {
            label: t('common.actions'),
            cell: (s) =>
              editable && (
                <Button
                  size="xs"
                  variant="default"
                  disabled={!s.enabled}
                  loading={trigger.isPending && trigger.variables?.id === s.id}
                  aria-label={t('schedules.trigger_one', { name: s.name })}
                  onClick={() => trigger.mutate({ id: s.id })}
                >
                  {t('schedules.trigger')}
                </Button>
              ),
          },
        ]}
        rows={list.data ?? []}
        minWidth={720}
        idAttribute="data-schedule-id"
      />
      {list.data?.length === 0 && <Text c="dimmed">{t('common.empty')}</Text>}
    </Stack>
  );
}
