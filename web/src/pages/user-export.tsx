import { Alert, Button, Group, Stack, Text } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useTRPC } from '../api.ts';
import { Dialog } from '../dialog.tsx';
import { useI18n } from '../i18n/index.tsx';
import { ArtifactDownload } from '../tasks/artifact-download.tsx';
import { TaskProgress } from '../tasks/task-progress.tsx';
import { useLiveTask } from '../tasks/live-task.ts';

function ExportProgress({ id, onClose }: { id: string; onClose: () => void }) {
  const { t } = useI18n();
  const { task } = useLiveTask(id);
  const data = task.data;
  return (
    <Dialog title={t('users.export')} onClose={onClose}>
      <Stack>
        {task.error && (
          <Alert color="red" role="alert">
            {messageOf(task.error)}
          </Alert>
        )}
        {data && (
          <>
            <TaskProgress value={data.progress} label={t('users.export_progress')} />
            <Text role="status">{t(`task.${data.status}`)}</Text>
            {data.error && (
              <Alert color="red" role="alert">
                {data.error}
              </Alert>
            )}
            {data.status === 'success' && <ArtifactDownload task={data} />}
          </>
        )}
      </Stack>
    </Dialog>
  );
}

/** "Export users": starts the export task, follows it live, then offers its CSV. */
export function ExportUsers({ search }: { search: string }) {
  const { t } = useI18n();
  const trpc = useTRPC();
  const [taskId, setTaskId] = useState<string>();
  const start = useMutation(trpc.userExport.start.mutationOptions({ onSuccess: (task) => setTaskId(task.id) }));
  return (
    <>
      <Button variant="default" loading={start.isPending} onClick={() => start.mutate(search ? { search } : {})}>
        {t('users.export')}
      </Button>
      {start.error && (
        <Alert color="red" role="alert">
          {messageOf(start.error)}
        </Alert>
      )}
      {taskId && <ExportProgress id={taskId} onClose={() => setTaskId(undefined)} />}
    </>
  );
}
