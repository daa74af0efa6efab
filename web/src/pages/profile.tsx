import { Stack, Table, Title } from '@mantine/core';
import { useI18n } from '../i18n/index.tsx';
import { useMe } from '../permissions.tsx';
import { formatTime } from '../format.ts';

export function Component() {
  const { t, language } = useI18n();
  const me = useMe();
  const rows: [string, string][] = [
    [t('profile.username'), me.username],
    [t('profile.email'), me.email],
    [t('profile.full_name'), me.full_name],
    [t('profile.roles'), me.roles.map((r) => r.name).join(', ') || t('common.none')],
    [t('profile.last_login'), formatTime(me.last_login_at, language)],
  ];
  return (
    <Stack>
      <Title order={2}>{t('nav.profile')}</Title>
      <Table variant="vertical" withTableBorder maw={560}>
        <Table.Tbody>
          {rows.map(([label, value]) => (
            <Table.Tr key={label}>
              <Table.Th w={160}>{label}</Table.Th>
              <Table.Td>{value}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}
