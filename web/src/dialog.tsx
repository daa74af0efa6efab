import { Alert, Button, Group, Modal, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { messageOf } from './api.ts';
import { useI18n } from './i18n/index.tsx';

/** An open Mantine modal as the console's CSP needs it (no scroll lock: it would add an inline style). */
export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ReactNode }) {
  const { t } = useI18n();
  return (
    <Modal
      opened
      onClose={onClose}
      title={title}
      closeButtonProps={{ 'aria-label': t('common.close') }}
      lockScroll={false}
    >
      {children}
    </Modal>
  );
}

interface ConfirmDeleteProps {
  title: string;
  text: string;
  pending: boolean;
  error: unknown;
  onConfirm: () => void;
  onClose: () => void;
}

/** Asks before a delete, and shows the API's refusal in the dialog. */
export function ConfirmDelete({ title, text, pending, error, onConfirm, onClose }: ConfirmDeleteProps) {
  const { t } = useI18n();
  return (
    <Dialog title={title} onClose={onClose}>
      <Stack>
        <Text>{text}</Text>
        {error != null && (
          <Alert color="red" role="alert">
            {messageOf(error)}
          </Alert>
        )}
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            {t('common.cancel')}
          </Button>
          {/* red.9: white on the default red-6 is 3.3:1, under AA */}
          <Button color="red.9" loading={pending} onClick={onConfirm}>
            {t('common.delete')}
          </Button>
        </Group>
      </Stack>
    </Dialog>
  );
}
