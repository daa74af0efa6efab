import { Badge, VisuallyHidden } from '@mantine/core';
import { useI18n } from '../i18n/index.tsx';
import type { LiveTask } from '../live-tasks.ts';
import { can, type Me } from '../permissions.tsx';

/**
 * The header's count of the caller's own running tasks, from the shell's `tasks.events` stream. While none runs it
 * is there for screen readers only (a bare "0" told sighted users nothing); the live region stays, so the first
 * task that starts is announced.
 */
export function RunningTasks({ me, tasks }: { me: Me; tasks: LiveTask[] }) {
  const { t } = useI18n();
  if (!can(me, 'task:list')) return null;
  const running = tasks.filter((task) => task.creator_id === me.id && task.status === 'running').length;
  const label = t('header.running_tasks', { count: running });
  if (!running)
    return (
      <VisuallyHidden role="status" aria-label={label}>
        {label}
      </VisuallyHidden>
    );
  return (
    <Badge variant="filled" role="status" aria-label={label} title={label}>
      {t('header.running_short', { count: running })}
    </Badge>
  );
}
