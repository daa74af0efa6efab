import { Stack, Text, Title } from '@mantine/core';
import { useI18n } from '../i18n/index.tsx';
import { useMe } from '../permissions.tsx';

export function Component() {
  const { t } = useI18n();
  const me = useMe();
  return (
    <Stack>
      <Title order={2}>{t('overview.welcome', { name: me.full_name || me.username })}</Title>
      <Text>{t('overview.text')}</Text>
    </Stack>
  );
}
