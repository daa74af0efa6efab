import { Select } from '@mantine/core';
import { useEffect } from 'react';
import { useI18n } from '../i18n/index.tsx';
import { MY_ORGS_PAGE, useMyOrganizations } from '../my-organizations.ts';
import { orgScope, useOrgScope } from '../org-scope.ts';

const ALL = 'all';

/**
 * Forgets a chosen organization the caller may no longer act in (left, deleted): every call would be refused.
 * Called by the shell before it has the signed-in user, since that call too would be refused.
 */
export function useForgetStaleOrganization() {
  const { query, orgs } = useMyOrganizations();
  const chosen = useOrgScope();
  const complete = query.data && query.data.total <= MY_ORGS_PAGE;
  useEffect(() => {
    if (chosen && complete && !orgs.some((o) => o.id === chosen)) orgScope.set(undefined);
  }, [chosen, complete, orgs]);
}

/** The header's choice of the organization every call acts in (X-Scope-OrgID); "All" acts in none. */
export function OrgSwitcher() {
  const { t } = useI18n();
  const { orgs } = useMyOrganizations();
  const chosen = useOrgScope();
  if (!orgs.length && !chosen) return null;
  return (
    <Select
      aria-label={t('org.switcher')}
      data={[
        { value: ALL, label: t('org.all') },
        ...orgs.map((o) => ({ value: o.id, label: o.name, disabled: o.status === 'disabled' })),
      ]}
      value={chosen ?? ALL}
      onChange={(value) => orgScope.set(value && value !== ALL ? value : undefined)}
      allowDeselect={false}
      searchable
      className="org-switcher"
      size="xs"
      comboboxProps={{ withinPortal: true, width: 240, position: 'bottom-end' }}
    />
  );
}
