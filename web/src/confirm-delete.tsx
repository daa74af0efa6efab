import { Alert, Button, Group, Stack, Text } from '@mantine/core';
import { useMutation, useQueryClient, type QueryFilters } from '@tanstack/react-query';
import { messageOf } from './api.ts';
import { Dialog } from './form-dialog.tsx';
import { useI18n } from './i18n/index.tsx';
import { notify } from './notify.ts';

/**
 * A dialog asking before a delete. `remove` calls the service; its refusal (a role still held...) is shown here,
 * and once it is done the queries `changed` names are asked again.
 */
export function ConfirmDelete(props: {
  title: string;
  text: string;
  remove: () => Promise<unknown>;
  changed: QueryFilters;
  onClose: () => void;
}) {
  const { t } = useI18n();
  const queries = useQueryClient();
  const remove = useMutation({
    mutationFn: props.remove,
    onSuccess: () => {
      void queries.invalidateQueries(props.changed);
      notify(t('common.deleted'), t('common.close'));
      props.onClose();
    },
  });
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      <Stack>
        <Text>{props.text}</Text>
        {remove.error && (
          <Alert color="red" role="alert">
            {messageOf(remove.error)}
          </Alert>
        )}
        <Group justify="flex-end">
          <Button variant="default" onClick={props.onClose}>
            {t('common.cancel')}
          </Button>
          <Button color="red.9" loading={remove.isPending} onClick={() => remove.mutate()}>
            {t('common.delete')}
          </Button>
        </Group>
      </Stack>
    </Dialog>
  );
}
