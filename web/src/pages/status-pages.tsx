import { Button, Stack, Text, Title } from '@mantine/core';
import { Link } from 'react-router';
import { useI18n } from '../i18n/index.tsx';
import type { MessageKey } from '../i18n/en.ts';

function StatusPage({ title, text }: { title: MessageKey; text: MessageKey }) {
  const { t } = useI18n();
  return (
    <Stack align="flex-start">
      <Title order={2}>{t(title)}</Title>
      <Text>{t(text)}</Text>
      <Button component={Link} to="/" variant="light">
        {t('page.home')}
      </Button>
    </Stack>
  );
}

export const ForbiddenPage = () => <StatusPage title="page.forbidden.title" text="page.forbidden.text" />;
export const NotFoundPage = () => <StatusPage title="page.notfound.title" text="page.notfound.text" />;
