import { Badge, Button } from '@mantine/core';
import type { inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from 'console-admin/client';
import { useState } from 'react';
import { ColumnTable } from '../column-table.tsx';
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
      <ColumnTable
        columns={[
          { label: t('audit.time'), cell: (record) => formatTime(record.created_at, language) },
          { label: t('audit.user'), cell: (record) => record.username },
          { label: t('audit.action'), cell: (record) => record.action },
          { label: t('audit.resource_type'), cell: (record) => record.resource_type },
          { label: t('audit.resource_id'), cell: (record) => record.resource_id },
          {
            label: t('audit.status'),
            cell: (record) => (
              <Badge variant="dot" color={record.status === 'success' ? 'green' : 'red'}>
                {t(`audit.${record.status}`)}
              </Badge>
            ),
          },
          { label: t('audit.ip'), cell: (record) => record.ip },
          {
            label: t('common.actions'),
            cell: (record) => (
              <Button
                size="xs"
                variant="default"
                aria-label={t('audit.details_of', { action: record.action, resource: record.resource_type })}
                onClick={() => setOpen(record)}
              >
                {t('audit.details')}
              </Button>
            ),
          },
        ]}
        rows={records}
        minWidth={720}
        idAttribute="data-audit-id"
        highlightOnHover
      />
      {open && <AuditDetails record={open} onClose={() => setOpen(undefined)} />}
    </>
  );
}
