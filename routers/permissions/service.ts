import { type Permission, permissionSchema } from './schemas.ts';

type DefaultRole = 'operator' | 'viewer';
interface Declared extends Permission {
  roles: DefaultRole[];
  /**
   * The code acts within the organization a request names (its routes filter by X-Scope-OrgID), so an
   * organization's role may hold it. Every other code reaches users, global roles or settings, and held
   * through an organization it would become a global right.
   */
  orgScoped?: true;
}

const OV: DefaultRole[] = ['operator', 'viewer'];
const O: DefaultRole[] = ['operator'];

// The built-in catalogue (docs/decisions.md "Identity and access"). `roles` says which seeded system roles get the code; admin gets all.
const BUILT_IN: Declared[] = [
  { code: 'user:list', name: 'List users', module: 'Users', roles: OV },
  { code: 'user:view', name: 'View users', module: 'Users', roles: OV },
  { code: 'user:create', name: 'Create users', module: 'Users', roles: O },
  { code: 'user:update', name: 'Update users', module: 'Users', roles: O },
  { code: 'user:delete', name: 'Delete users', module: 'Users', roles: [] },
  { code: 'user:export', name: 'Export users', module: 'Users', roles: O },
  { code: 'role:list', name: 'List roles', module: 'Roles', roles: OV, orgScoped: true },
  { code: 'role:view', name: 'View roles', module: 'Roles', roles: OV, orgScoped: true },
  { code: 'role:create', name: 'Create roles', module: 'Roles', roles: O },
  { code: 'role:update', name: 'Update roles', module: 'Roles', roles: O },
  { code: 'role:delete', name: 'Delete roles', module: 'Roles', roles: [] },
  { code: 'permission:list', name: 'List permissions', module: 'Permissions', roles: OV },
  { code: 'system:settings:view', name: 'View settings', module: 'System settings', roles: OV },
  { code: 'system:settings:update', name: 'Update settings', module: 'System settings', roles: [] },
  { code: 'audit_log:list', name: 'List audit logs', module: 'Audit logs', roles: OV, orgScoped: true },
  { code: 'audit_log:verify', name: 'Verify the audit chain', module: 'Audit logs', roles: [] },
  { code: 'task:list', name: 'List tasks', module: 'Tasks', roles: OV, orgScoped: true },
  { code: 'task:view', name: 'View tasks', module: 'Tasks', roles: OV, orgScoped: true },
  { code: 'task:cancel', name: 'Cancel tasks', module: 'Tasks', roles: O, orgScoped: true },
  { code: 'task:retry', name: 'Retry tasks', module: 'Tasks', roles: O, orgScoped: true },
  { code: 'task:delete', name: 'Delete tasks', module: 'Tasks', roles: [], orgScoped: true },
  { code: 'task:schedule:list', name: 'List task schedules', module: 'Tasks', roles: OV },
  { code: 'task:schedule:update', name: 'Update task schedules', module: 'Tasks', roles: O },
  { code: 'org:list', name: 'List organizations', module: 'Organizations', roles: [] },
  { code: 'org:view', name: 'View organizations', module: 'Organizations', roles: [], orgScoped: true },
  { code: 'org:create', name: 'Create organizations', module: 'Organizations', roles: [] },
  { code: 'org:update', name: 'Update organizations', module: 'Organizations', roles: [], orgScoped: true },
  { code: 'org:delete', name: 'Delete organizations', module: 'Organizations', roles: [] },
  {
    code: 'org:member:update',
    name: 'Manage organization members',
    module: 'Organizations',
    roles: [],
    orgScoped: true,
  },
];

/** The permissions this service knows: the built-in ones plus what an embedding application registers. */
export class PermissionCatalogue {
  private readonly byCode = new Map<string, Declared>();
  /** The codes, sorted, until the next registration (an administrator's GET /auth/me answers them all). */
  private sortedCodes: readonly string[] | undefined;

  constructor() {
    for (const p of BUILT_IN) this.byCode.set(p.code, p);
  }

  /** Adds an application permission; `defaultRoles` seeds it into operator/viewer when those roles are created. */
  register(permission: Permission & { defaultRoles?: DefaultRole[] }): void {
    const parsed = permissionSchema.parse(permission);
    this.byCode.set(parsed.code, { ...parsed, roles: permission.defaultRoles ?? [] });
    this.sortedCodes = undefined;
  }

  /** Every code, sorted; the same frozen array until a permission is registered. */
  codes(): readonly string[] {
    return (this.sortedCodes ??= Object.freeze([...this.byCode.keys()].sort()));
  }

  has(code: string): boolean {
    return this.byCode.has(code);
  }

  /** Whether an organization's role may hold the code; application permissions never are (they may act globally). */
  orgScoped(code: string): boolean {
    return this.byCode.get(code)?.orgScoped === true;
  }

  /** The catalogue; `orgScopedOnly` keeps what an organization's role may hold. */
  list(orgScopedOnly = false): Permission[] {
    return [...this.byCode.values()]
      .filter((p) => !orgScopedOnly || p.orgScoped)
      .map(({ code, name, module }) => ({ code, name, module }));
  }

  defaultsFor(role: DefaultRole): string[] {
    return [...this.byCode.values()].filter((p) => p.roles.includes(role)).map((p) => p.code);
  }
}
