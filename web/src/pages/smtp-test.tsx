import { Alert, Button, Group, Modal, Stack, Textarea, TextInput } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useTRPC } from '../api.ts';
import { placeError } from '../field-error.ts';
import { Refused } from '../refused.tsx';
import { useI18n } from '../i18n/index.tsx';

/** Sends one email through the stored SMTP settings and says how it went. */
export function SmtpTest({ onClose }: { onClose: () => void }) {
  const { t } = useI18n();
  const trpc = useTRPC();
  const [mail, setMail] = useState({ to: '', subject: t('smtp.test_subject'), body: t('smtp.test_body') });
  const send = useMutation(trpc.smtp.test.mutationOptions());
  const refusal = placeError(send.error, ['to', 'subject', 'body']);
  const errorOf = refusal.at;
  const bind = (name: keyof typeof mail) => ({
    value: mail[name],
    error: errorOf(name),
    onChange: (e: { currentTarget: { value: string } }) => setMail({ ...mail, [name]: e.currentTarget.value }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    send.mutate(mail);
  };
  return (
    <Modal
      opened
      onClose={onClose}
      title={t('smtp.test')}
      closeButtonProps={{ 'aria-label': t('common.close') }}
      lockScroll={false}
    >
      <form onSubmit={submit} noValidate>
        <Stack>
          {send.data && (
            <Alert color="green" role="status">
              {send.data.message}
            </Alert>
          )}
          <Refused message={refusal.general} />
          <TextInput label={t('smtp.to')} type="email" required {...bind('to')} />
          <TextInput label={t('smtp.subject')} required {...bind('subject')} />
          <Textarea label={t('smtp.body')} required autosize minRows={3} {...bind('body')} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t('common.close')}
            </Button>
            <Button type="submit" loading={send.isPending}>
              {t('smtp.send')}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
