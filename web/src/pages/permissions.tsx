import { Alert, Loader, Stack, Table, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { messageOf, useTRPC } from '../api.ts';
import { useI18n } from '../i18n/index.tsx';
import { byModule } from './permission-matrix.tsx';

/** The permission catalogue, read-only: it is declared in code, a table per module. */
export function Component() {
  const { t } = useI18n();
  const trpc = useTRPC();
  const list = useQuery(trpc.permissions.list.queryOptions());
  return (
    <Stack>
      <Title order={2}>{t('perms.title')}</Title>
      {list.error && (
        <Alert color="red" role="alert">
          {messageOf(list.error)}
        </Alert>
      )}
      {!list.data && !list.error && <Loader aria-label={t('app.loading')} />}
      {byModule(list.data ?? []).map(([module, permissions]) => (
        <section key={module} aria-label={module}>
          <Title order={3} size="h4" mb="xs">
            {module}
          </Title>
          <Table.ScrollContainer minWidth={360}>
            <Table striped>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t('perms.name')}</Table.Th>
                  <Table.Th>{t('perms.code')}</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {permissions.map((p) => (
                  <Table.Tr key={p.code}>
                    <Table.Td>{p.name}</Table.Td>
                    <Table.Td>
                      <code>{p.code}</code>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        </section>
      ))}
    </Stack>
  );
}
