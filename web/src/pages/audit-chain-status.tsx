import { Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useTRPC } from '../api.ts';
import { useI18n } from '../i18n/index.tsx';

/** One line saying whether the audit hash chain verifies: for callers allowed to verify it. */
export function AuditChainStatus() {
  const { t } = useI18n();
  const trpc = useTRPC();
  // A walk of the whole log: asked once per visit, not on every focus.
  const chain = useQuery({ ...trpc.audit.verify.queryOptions(), staleTime: Infinity, retry: false });
  const v = chain.data;
  if (!v) return null;
  return v.broken ? (
    <Text c="red" role="status">
      {t('audit.chain_broken', { seq: v.broken.seq, kind: t(`audit.break_${v.broken.kind}`) })}
    </Text>
  ) : (
    <Text c="dimmed" size="sm" role="status">
      {t('audit.chain_intact', { seq: v.verified_seq })}
    </Text>
  );
}
