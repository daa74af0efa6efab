import { Alert, Button, Group, Text } from '@mantine/core';
import { Link } from 'react-router';
import { useI18n } from '../i18n/index.tsx';
import type { Me } from '../permissions.tsx';

/** While the password is still the one generated at the first start, every page suggests changing it. */
export function PasswordNotice({ me }: { me: Me }) {
  const { t } = useI18n();
  if (!me.password_generated) return null;
  return (
    <Alert color="yellow" mb="md">
      <Group justify="space-between">
        <div>
          <Text size="sm" fw={700}>
            {t('notice.generated_title')}
          </Text>
          <Text size="sm">{t('notice.generated_text')}</Text>
        </div>
        <Button component={Link} to="/profile" variant="default" size="xs">
          {t('notice.generated_link')}
        </Button>
      </Group>
    </Alert>
  );
}
