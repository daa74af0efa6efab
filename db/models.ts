import type { Knex } from 'knex';
import { Model, QueryBuilder, type Page } from 'objection';
import { isoFromDb, type Dialect } from './dialects/index.ts';
import type { TableNames } from './tables.ts';

const TIME_COLUMNS = new Set([
  'created_at',
  'updated_at',
  'deleted_at',
  'locked_until',
  'last_login_at',
  'password_changed_at',
  'last_seen_at',
  'expires_at',
  'revoked_at',
]);
const BOOL_COLUMNS = new Set(['mfa_enabled', 'is_system']);

/** Soft delete: finds skip rows with `deleted_at` unless `withDeleted()` is asked for (kept in context: objection clones builders). */
export class SoftDeleteQueryBuilder<M extends Model, R = M[]> extends QueryBuilder<M, R> {
  declare ArrayQueryBuilderType: SoftDeleteQueryBuilder<M, M[]>;
  declare SingleQueryBuilderType: SoftDeleteQueryBuilder<M, M>;
  declare MaybeSingleQueryBuilderType: SoftDeleteQueryBuilder<M, M | undefined>;
  declare NumberQueryBuilderType: SoftDeleteQueryBuilder<M, number>;
  declare PageQueryBuilderType: SoftDeleteQueryBuilder<M, Page<M>>;

  constructor(...args: unknown[]) {
    super(...(args as []));
    this.onBuild((builder) => {
      const b = builder as SoftDeleteQueryBuilder<M, R>;
      if (!b.context().withDeleted && b.isFind()) b.whereNull(`${b.tableRefFor(b.modelClass())}.deleted_at`);
    });
  }

  withDeleted(): this {
    return this.context({ withDeleted: true });
  }
}

export interface UserRow {
  id: string;
  username: string;
  email: string;
  username_key: string | null;
  email_key: string | null;
  password_hash: string;
  full_name: string;
  avatar: string;
  status: 'active' | 'disabled' | 'locked';
  mfa_enabled: boolean;
  locale: string;
  failed_attempts: number;
  locked_until: string | null;
  last_login_at: string | null;
  password_changed_at: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface RoleRow {
  id: string;
  name: string;
  /** `name` lower-cased within its scope: unique among global roles, and among one organization's roles. */
  name_key: string;
  description: string;
  is_system: boolean;
  /** The organization the role belongs to; null for a global role. */
  org_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface OrganizationRow {
  id: string;
  name: string;
  name_key: string | null;
  description: string;
  status: 'active' | 'disabled';
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

/**
 * Builds the objection models of one database. Models are made per database (not module-global) because
 * table names carry the configured prefix and one process may hold several consoles, as the tests do.
 */
export function defineModels(knex: Knex, t: TableNames, dialect: Dialect) {
  class BaseModel extends Model {
    override $formatDatabaseJson(json: Record<string, unknown>) {
      const out = super.$formatDatabaseJson(json);
      for (const k of Object.keys(out)) {
        const v = out[k];
        if (TIME_COLUMNS.has(k) && typeof v === 'string') out[k] = dialect.toDbTime(new Date(v));
      }
      return out;
    }
    override $parseDatabaseJson(json: Record<string, unknown>) {
      const out = super.$parseDatabaseJson(json);
      for (const k of Object.keys(out)) {
        if (TIME_COLUMNS.has(k)) out[k] = isoFromDb(out[k]);
        else if (BOOL_COLUMNS.has(k)) out[k] = Boolean(out[k]);
      }
      return out;
    }
  }
  BaseModel.knex(knex);

  class RolePermission extends BaseModel {
    declare role_id: string;
    declare permission: string;
    static override tableName = t.rolePermissions;
    static override idColumn = ['role_id', 'permission'];
  }

  class Role extends BaseModel {
    static override tableName = t.roles;
    declare permissions?: RolePermission[];
    static override relationMappings = () => ({
      permissions: {
        relation: Model.HasManyRelation,
        modelClass: RolePermission,
        join: { from: `${t.roles}.id`, to: `${t.rolePermissions}.role_id` },
      },
    });
  }
  interface Role extends RoleRow {}

  class User extends BaseModel {
    static override tableName = t.users;
    static override QueryBuilder = SoftDeleteQueryBuilder;
    declare QueryBuilderType: SoftDeleteQueryBuilder<this>;
    declare roles?: Role[];
    static override relationMappings = () => ({
      roles: {
        relation: Model.ManyToManyRelation,
        modelClass: Role,
        join: {
          from: `${t.users}.id`,
          through: { from: `${t.userRoles}.user_id`, to: `${t.userRoles}.role_id` },
          to: `${t.roles}.id`,
        },
      },
    });
  }
  interface User extends UserRow {}

  class Organization extends BaseModel {
    static override tableName = t.organizations;
    static override QueryBuilder = SoftDeleteQueryBuilder;
    declare QueryBuilderType: SoftDeleteQueryBuilder<this>;
  }
  interface Organization extends OrganizationRow {}

  return { BaseModel, User, Role, RolePermission, Organization };
}

export type Models = ReturnType<typeof defineModels>;
export type UserModel = InstanceType<Models['User']>;
export type RoleModel = InstanceType<Models['Role']>;
export type OrganizationModel = InstanceType<Models['Organization']>;
