import { Alert, Button, Group, Modal, Stack, Textarea, TextInput, type ModalProps } from '@mantine/core';
import type { FormEvent, ReactNode } from 'react';
import type { PlacedError } from './field-error.ts';
import { useI18n } from './i18n/index.tsx';

/** A dialog of the console: its close button named in the UI's language, no scroll lock (its styles are inline). */
export function Dialog(props: { title: string; size?: ModalProps['size']; onClose: () => void; children: ReactNode }) {
  const { t } = useI18n();
  return (
    <Modal
      opened
      onClose={props.onClose}
      size={props.size}
      title={props.title}
      closeButtonProps={{ 'aria-label': t('common.close') }}
      lockScroll={false}
    >
      {props.children}
    </Modal>
  );
}

/** A dialog holding one form: the error no field owns above it, Cancel and the submit button below. */
export function FormDialog(props: {
  title: string;
  size?: ModalProps['size'];
  error: string | undefined;
  submitLabel: string;
  pending: boolean;
  onSubmit: () => void;
  onClose: () => void;
  children: ReactNode;
}) {
  const { t } = useI18n();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    props.onSubmit();
  };
  return (
    <Dialog title={props.title} size={props.size} onClose={props.onClose}>
      <form onSubmit={submit} noValidate>
        <Stack>
          {props.error && (
            <Alert color="red" role="alert">
              {props.error}
            </Alert>
          )}
          {props.children}
          <Group justify="flex-end">
            <Button variant="default" onClick={props.onClose}>
              {t('common.cancel')}
            </Button>
            <Button type="submit" loading={props.pending}>
              {props.submitLabel}
            </Button>
          </Group>
        </Stack>
      </form>
    </Dialog>
  );
}

/** The name and description every named record (role, organization) has, each with its field's error. */
export function NameFields(props: {
  labels: { name: string; description: string };
  value: { name: string; description: string };
  onChange: (value: { name: string; description: string }) => void;
  error: PlacedError;
}) {
  const { value, onChange } = props;
  return (
    <>
      <TextInput
        label={props.labels.name}
        required
        autoComplete="off"
        value={value.name}
        error={props.error.at('name')}
        onChange={(e) => onChange({ ...value, name: e.currentTarget.value })}
      />
      <Textarea
        label={props.labels.description}
        autosize
        minRows={2}
        value={value.description}
        error={props.error.at('description')}
        onChange={(e) => onChange({ ...value, description: e.currentTarget.value })}
      />
    </>
  );
}
