import { Badge, Button, Table } from '@mantine/core';
import type { inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from 'console-admin/client';
import { useState } from 'react';
import { formatTime } from '../format.ts';
import { useI18n } from '../i18n/index.tsx';
import { AuditDetails } from './audit-details.tsx';

export type AuditRecord = inferRouterOutputs<AppRouter>['audit']['list']['data'][number];

/** Audit records as rows, each with a button that opens its details. */
export function AuditTable({ records }: { records: AuditRecord[] }) {
  const { t, language } = useI18n();
  const [open, setOpen] = useState<AuditRecord | undefined>();
  return (
    <>
      <Table.ScrollContainer minWidth={720}>
        <Table striped highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>{t('audit.time')}</Table.Th>
              <Table.Th>{t('audit.user')}</Table.Th>
              <Table.Th>{t('audit.action')}</Table.Th>
              <Table.Th>{t('audit.resource_type')}</Table.Th>
              <Table.Th>{t('audit.resource_id')}</Table.Th>
              <Table.Th>{t('audit.status')}</Table.Th>
              <Table.Th>{t('audit.ip')}</Table.Th>
              <Table.Th>{t('common.actions')}</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {records.map((record) => (
              <Table.Tr key={record.id} data-audit-id={record.id}>
                <Table.Td>{formatTime(record.created_at, language)}</Table.Td>
                <Table.Td>{record.username}</Table.Td>
                <Table.Td>{record.action}</Table.Td>
                <Table.Td>{record.resource_type}</Table.Td>
                <Table.Td>{record.resource_id}</Table.Td>
                <Table.Td>
                  <Badge variant="dot" color={record.status === 'success' ? 'green' : 'red'}>
                    {t(`audit.${record.status}`)}
                  </Badge>
                </Table.Td>
                <Table.Td>{record.ip}</Table.Td>
                <Table.Td>
                  <Button
                    size="xs"
                    variant="default"
                    aria-label={t('audit.details_of', { action: record.action, resource: record.resource_type })}
                    onClick={() => setOpen(record)}
                  >
                    {t('audit.details')}
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {open && <AuditDetails record={open} onClose={() => setOpen(undefined)} />}
    </>
  );
}
