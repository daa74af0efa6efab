import { Alert, Button, Stack } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { messageOf, trpcClient } from '../api.ts';
import { useI18n } from '../i18n/index.tsx';
import type { Task } from './live-task.ts';

/**
 * Downloads a task's artifact through a signed URL asked for at the click: the browser fetches the file without the
 * token, which never goes into a URL. The URL works for ten minutes, so it is never kept.
 */
export function ArtifactDownload({ task }: { task: Task }) {
  const { t } = useI18n();
  const sign = useMutation({
    mutationFn: () => trpcClient.files.sign.query({ fileKey: task.artifact_file_key! }),
    onSuccess: ({ url }) => window.location.assign(new URL(url, window.location.href).href),
  });
  if (!task.artifact_file_key) return null;
  return (
    <Stack gap="xs" align="flex-start">
      <Button variant="light" loading={sign.isPending} onClick={() => sign.mutate()}>
        {t('task.download', { name: task.artifact_file_name ?? task.artifact_file_key })}
      </Button>
      {sign.error && (
        <Alert color="red" role="alert">
          {messageOf(sign.error)}
        </Alert>
      )}
    </Stack>
  );
}
