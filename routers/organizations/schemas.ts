import { z } from 'zod';
import type { OrganizationModel } from '../../db/models.ts';
import { timestamp, uuidString } from '../common/schemas.ts';

export const orgStatus = z.enum(['active', 'disabled']);

export const organizationSchema = z
  .object({
    id: uuidString,
    name: z.string(),
    description: z.string(),
    status: orgStatus,
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Organization' });
export type OrganizationJson = z.infer<typeof organizationSchema>;

export const memberSchema = z
  .object({
    user_id: uuidString,
    username: z.string(),
    roles: z
      .array(z.object({ id: uuidString, name: z.string() }))
      .meta({ description: "The member's roles in this organization" }),
    created_at: timestamp.meta({ description: 'When the user became a member' }),
  })
  .meta({ id: 'OrganizationMember' });

export const organizationDetailSchema = organizationSchema
  .extend({ members: z.array(memberSchema) })
  .meta({ id: 'OrganizationDetail' });
export type OrganizationDetailJson = z.infer<typeof organizationDetailSchema>;

const orgName = z.string().trim().min(1).max(128);
const description = z.string().max(1024);

export const createOrganizationInput = z.object({
  name: orgName,
  description: description.default(''),
  status: orgStatus.default('active'),
});

export const updateOrganizationInput = z.object({
  id: z.uuid(),
  name: orgName.optional(),
  description: description.optional(),
  status: orgStatus.optional(),
});

export const setMemberInput = z.object({
  id: z.uuid(),
  user_id: z.uuid(),
  role_ids: z.array(z.uuid()).max(100).default([]),
});

export const memberParams = z.object({ id: z.uuid(), userId: z.uuid() });

export function toOrganizationJson(o: OrganizationModel): OrganizationJson {
  return {
    id: o.id,
    name: o.name,
    description: o.description,
    status: o.status,
    created_at: o.created_at,
    updated_at: o.updated_at,
  };
}
