import { Checkbox, Fieldset, Stack } from '@mantine/core';
import { useI18n } from '../i18n/index.tsx';

export interface Permission {
  code: string;
  name: string;
  module: string;
}

/** The catalogue's permissions by module, in the order it lists them. */
export function byModule(permissions: readonly Permission[]): [string, Permission[]][] {
  const modules = new Map<string, Permission[]>();
  for (const p of permissions) modules.set(p.module, [...(modules.get(p.module) ?? []), p]);
  return [...modules];
}

/**
 * A checkbox per permission, grouped by module, with a checkbox per module that sets all of its permissions the
 * caller may grant (the service refuses the others).
 */
export function PermissionMatrix(props: {
  permissions: readonly Permission[];
  value: string[];
  onChange: (codes: string[]) => void;
  grantable: (code: string) => boolean;
}) {
  const { t } = useI18n();
  const chosen = new Set(props.value);
  const toggle = (codes: string[], on: boolean) => {
    const next = new Set(chosen);
    for (const code of codes) {
      if (on) next.add(code);
      else next.delete(code);
    }
    props.onChange([...next].sort());
  };
  return (
    <Stack gap="sm">
      {byModule(props.permissions).map(([module, permissions]) => {
        const held = permissions.filter((p) => chosen.has(p.code)).length;
        const grantable = permissions.filter((p) => props.grantable(p.code)).map((p) => p.code);
        return (
          <Fieldset key={module} legend={module} variant="filled">
            <Checkbox
              mb="xs"
              fw={600}
              label={t('roles.all_of', { module })}
              checked={held === permissions.length}
              indeterminate={held > 0 && held < permissions.length}
              disabled={grantable.length === 0}
              onChange={(e) => toggle(grantable, e.currentTarget.checked)}
            />
            <Stack gap="xs" ml="md">
              {permissions.map((p) => (
                <Checkbox
                  key={p.code}
                  label={p.name}
                  description={p.code}
                  checked={chosen.has(p.code)}
                  disabled={!props.grantable(p.code)}
                  onChange={(e) => toggle([p.code], e.currentTarget.checked)}
                />
              ))}
            </Stack>
          </Fieldset>
        );
      })}
    </Stack>
  );
}
