import { Code, Modal, Stack, Table, Title } from '@mantine/core';
import { formatTime } from '../format.ts';
import { useI18n } from '../i18n/index.tsx';
import type { MessageKey } from '../i18n/en.ts';
import type { AuditRecord } from './audit-table.tsx';

/** A value as pretty-printed JSON text: rendered as text, whatever markup it holds. */
function Json({ label, value }: { label: string; value: unknown }) {
  return (
    <Stack gap={4}>
      <Title order={4} size="h6">
        {label}
      </Title>
      <Code block style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
        {JSON.stringify(value, null, 2)}
      </Code>
    </Stack>
  );
}

/** One audit record: who, what, where from, and its details (the record before and after a change). */
export function AuditDetails({ record, onClose }: { record: AuditRecord; onClose: () => void }) {
  const { t, language } = useI18n();
  const { before, after, ...other } = record.details;
  const facts: [MessageKey, string][] = [
    ['audit.time', formatTime(record.created_at, language)],
    ['audit.user', record.username],
    ['audit.action', record.action],
    ['audit.resource_type', record.resource_type],
    ['audit.resource_id', record.resource_id],
    ['audit.status', t(`audit.${record.status}`)],
    ['audit.ip', record.ip],
    ['audit.user_agent', record.user_agent],
  ];
  return (
    <Modal
      opened
      onClose={onClose}
      size="lg"
      title={t('audit.details_of', { action: record.action, resource: record.resource_type })}
      closeButtonProps={{ 'aria-label': t('common.close') }}
      lockScroll={false}
    >
      <Stack>
        <Table layout="fixed">
          <Table.Tbody>
            {facts.map(([label, value]) => (
              <Table.Tr key={label}>
                <Table.Th scope="row" w="35%">
                  {t(label)}
                </Table.Th>
                <Table.Td style={{ overflowWrap: 'anywhere' }}>{value || '—'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        {'before' in record.details && <Json label={t('audit.before')} value={before} />}
        {'after' in record.details && <Json label={t('audit.after')} value={after} />}
        {Object.keys(other).length > 0 && <Json label={t('audit.other')} value={other} />}
      </Stack>
    </Modal>
  );
}
