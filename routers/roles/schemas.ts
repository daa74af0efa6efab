import { z } from 'zod';
import type { RoleWithPermissions } from '../../db/repositories/roles.ts';
import { searchInput, timestamp, uuidString } from '../common/schemas.ts';

export const roleSchema = z
  .object({
    id: uuidString,
    name: z.string(),
    description: z.string(),
    permissions: z.array(z.string()),
    is_system: z.boolean(),
    org_id: uuidString.nullable().meta({
      description:
        'The organization the role belongs to (assigned through its members); null for a global role (assigned on users)',
    }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Role' });
export type RoleJson = z.infer<typeof roleSchema>;

const roleName = z.string().trim().min(1).max(64);
const permissionList = z.array(z.string().max(128)).max(500);

export const listRolesInput = searchInput.extend({
  org_id: z.uuid().optional().meta({ description: "Only this organization's roles" }),
});

export const createRoleInput = z.object({
  name: roleName,
  description: z.string().max(1024).default(''),
  permissions: permissionList.default([]),
  org_id: z
    .uuid()
    .nullable()
    .optional()
    .meta({ description: 'Makes the role belong to this organization; fixed once created' }),
});

export const updateRoleInput = z.object({
  id: z.uuid(),
  name: roleName.optional(),
  description: z.string().max(1024).optional(),
  permissions: permissionList.optional(),
});

export function toRoleJson(r: RoleWithPermissions): RoleJson {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    permissions: (r.permissions ?? []).map((p) => p.permission).sort(),
    is_system: r.is_system,
    org_id: r.org_id ?? null,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}
