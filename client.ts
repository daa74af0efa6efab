// Generated from routers/app-router.ts by tools/client-types.ts (`npm run client-types`): do not edit.
// The package's `console-admin/client` entry: the types a frontend builds its tRPC client from, with nothing of
// the server reachable from them (see docs/decisions.md, "Typed frontends").
import type { inferRouterInputs, inferRouterOutputs, TRPCBuiltRouter, TRPCMutationProcedure, TRPCQueryProcedure, TRPCSubscriptionProcedure } from '@trpc/server';
import type { TrackedData } from '@trpc/server/unstable-core-do-not-import';

/** What a failed call carries: tRPC's own fields, plus the service's code (`appCode`, E4011...) and message. */
export type ErrorShape = {
  message: string;
  code: -32700 | -32600 | -32603 | -32001 | -32002 | -32003 | -32004 | -32005 | -32008 | -32009 | -32012 | -32013 | -32015 | -32022 | -32028 | -32029 | -32099;
  data: {
    code: "PARSE_ERROR" | "BAD_REQUEST" | "INTERNAL_SERVER_ERROR" | "NOT_IMPLEMENTED" | "BAD_GATEWAY" | "SERVICE_UNAVAILABLE" | "GATEWAY_TIMEOUT" | "UNAUTHORIZED" | "PAYMENT_REQUIRED" | "FORBIDDEN" | "NOT_FOUND" | "METHOD_NOT_SUPPORTED" | "TIMEOUT" | "CONFLICT" | "PRECONDITION_FAILED" | "PAYLOAD_TOO_LARGE" | "UNSUPPORTED_MEDIA_TYPE" | "UNPROCESSABLE_CONTENT" | "PRECONDITION_REQUIRED" | "TOO_MANY_REQUESTS" | "CLIENT_CLOSED_REQUEST";
    httpStatus: number;
    path: string | undefined;
  };
  appCode: string;
  err: string;
  trace_id: string | undefined;
};

type Root = { ctx: object; meta: object; errorShape: ErrorShape; transformer: false };

/** The type `createTRPCClient<AppRouter>` is built from. */
export type AppRouter = TRPCBuiltRouter<Root, {
  auth: {
    login: TRPCMutationProcedure<{
      input: {
        username?: string | undefined;
        password?: string | undefined;
        mfa_token?: string | undefined;
        mfa_code?: string | undefined;
      };
      output: {
        token: string;
        expires_at: string;
        user: {
          id: string;
          username: string;
          email: string;
          full_name: string;
          avatar: string;
          status: "active" | "disabled" | "locked";
          mfa_enabled: boolean;
          roles: {
            id: string;
            name: string;
          }[];
          last_login_at: string | null;
          created_at: string;
          updated_at: string;
        };
      } | {
        mfa_required: true;
        mfa_token: string;
      };
      meta: object;
    }>;
    requestPasswordReset: TRPCMutationProcedure<{
      input: {
        email: string;
      };
      output: {
        message: string;
      };
      meta: object;
    }>;
    confirmPasswordReset: TRPCMutationProcedure<{
      input: {
        token: string;
        password: string;
      };
      output: {
        message: string;
      };
      meta: object;
    }>;
    me: TRPCQueryProcedure<{
      input: Record<string, never> | undefined;
      output: {
        id: string;
        username: string;
        email: string;
        full_name: string;
        avatar: string;
        status: "active" | "disabled" | "locked";
        mfa_enabled: boolean;
        last_login_at: string | null;
        created_at: string;
        updated_at: string;
        permissions: string[];
        roles: {
          id: string;
          name: string;
          permissions: string[];
        }[];
        password_generated: boolean;
      };
      meta: object;
    }>;
    updateMe: TRPCMutationProcedure<{
      input: {
        full_name?: string | undefined;
        email?: string | undefined;
        mfa_enabled?: boolean | undefined;
        password?: string | undefined;
      };
      output: {
        id: string;
        username: string;
        email: string;
        full_name: string;
        avatar: string;
        status: "active" | "disabled" | "locked";
        mfa_enabled: boolean;
        roles: {
          id: string;
          name: string;
        }[];
        last_login_at: string | null;
        created_at: string;
        updated_at: string;
      };
      meta: object;
    }>;
    logout: TRPCMutationProcedure<{
      input: Record<string, never> | undefined;
      output: {
        message: string;
      };
      meta: object;
    }>;
    refresh: TRPCMutationProcedure<{
      input: Record<string, never> | undefined;
      output: {
        token: string;
        expires_at: string;
      };
      meta: object;
    }>;
    changePassword: TRPCMutationProcedure<{
      input: {
        old_password: string;
        new_password: string;
      };
      output: {
        message: string;
      };
      meta: object;
    }>;
  };
  oauth: {
    providers: TRPCQueryProcedure<{
      input: Record<string, never> | undefined;
      output: {
        name: string;
        display_name: string;
        icon_url: string | null;
      }[];
      meta: object;
    }>;
    callback: TRPCMutationProcedure<{
      input: {
        state: string;
        name: string;
        code?: string | undefined;
        error?: string | undefined;
        iss?: string | undefined;
      };
      output: {
        token: string;
        expires_at: string;
        user: {
          id: string;
          username: string;
          email: string;
          full_name: string;
          avatar: string;
          status: "active" | "disabled" | "locked";
          mfa_enabled: boolean;
          roles: {
            id: string;
            name: string;
          }[];
          last_login_at: string | null;
          created_at: string;
          updated_at: string;
        };
      } | {
        mfa_required: true;
        mfa_token: string;
      };
      meta: object;
    }>;
  };
  users: {
    list: TRPCQueryProcedure<{
      input: {
        current?: number | undefined;
        page_size?: number | undefined;
        search?: string | undefined;
      };
      output: {
        data: {
          id: string;
          username: string;
          email: string;
          full_name: string;
          avatar: string;
          status: "active" | "disabled" | "locked";
          mfa_enabled: boolean;
          roles: {
            id: string;
            name: string;
          }[];
          last_login_at: string | null;
          created_at: string;
          updated_at: string;
        }[];
        total: number;
        current: number;
        page_size: number;
      };
      meta: object;
    }>;
    get: TRPCQueryProcedure<{
      input: {
        id: string;
      };
      output: {
        id: string;
        username: string;
        email: string;
        full_name: string;
        avatar: string;
        status: "active" | "disabled" | "locked";
        mfa_enabled: boolean;
        roles: {
          id: string;
          name: string;
        }[];
        last_login_at: string | null;
        created_at: string;
        updated_at: string;
      };
      meta: object;
    }>;
    create: TRPCMutationProcedure<{
      input: {
        username: string;
        email: string;
        password: string;
        full_name?: string | undefined;
        avatar?: string | undefined;
        role_ids?: string[] | undefined;
        mfa_enabled?: boolean | undefined;
      };
      output: {
        id: string;
        username: string;
        email: string;
        full_name: string;
        avatar: string;
        status: "active" | "disabled" | "locked";
        mfa_enabled: boolean;
        roles: {
          id: string;
          name: string;
        }[];
        last_login_at: string | null;
        created_at: string;
        updated_at: string;
      };
      meta: object;
    }>;
    update: TRPCMutationProcedure<{
      input: {
        id: string;
        email?: string | undefined;
        status?: "active" | "disabled" | undefined;
        full_name?: string | undefined;
        avatar?: string | undefined;
        role_ids?: string[] | undefined;
        mfa_enabled?: boolean | undefined;
      };
      output: {
        id: string;
        username: string;
        email: string;
        full_name: string;
        avatar: string;
        status: "active" | "disabled" | "locked";
        mfa_enabled: boolean;
        roles: {
          id: string;
          name: string;
        }[];
        last_login_at: string | null;
        created_at: string;
        updated_at: string;
      };
      meta: object;
    }>;
    delete: TRPCMutationProcedure<{
      input: {
        id: string;
      };
      output: {
        message: string;
      };
      meta: object;
    }>;
    setPassword: TRPCMutationProcedure<{
      input: {
        id: string;
        password: string;
      };
      output: {
        id: string;
        username: string;
        email: string;
        full_name: string;
        avatar: string;
        status: "active" | "disabled" | "locked";
        mfa_enabled: boolean;
        roles: {
          id: string;
          name: string;
        }[];
        last_login_at: string | null;
        created_at: string;
        updated_at: string;
      };
      meta: object;
    }>;
    unlock: TRPCMutationProcedure<{
      input: {
        id: string;
      };
      output: {
        id: string;
        username: string;
        email: string;
        full_name: string;
        avatar: string;
        status: "active" | "disabled" | "locked";
        mfa_enabled: boolean;
        roles: {
          id: string;
          name: string;
        }[];
        last_login_at: string | null;
        created_at: string;
        updated_at: string;
      };
      meta: object;
    }>;
  };
  roles: {
    list: TRPCQueryProcedure<{
      input: {
        current?: number | undefined;
        page_size?: number | undefined;
        search?: string | undefined;
        org_id?: string | undefined;
      };
      output: {
        data: {
          id: string;
          name: string;
          description: string;
          permissions: string[];
          is_system: boolean;
          org_id: string | null;
          created_at: string;
          updated_at: string;
        }[];
        total: number;
        current: number;
        page_size: number;
      };
      meta: object;
    }>;
    get: TRPCQueryProcedure<{
      input: {
        id: string;
      };
      output: {
        id: string;
        name: string;
        description: string;
        permissions: string[];
        is_system: boolean;
        org_id: string | null;
        created_at: string;
        updated_at: string;
      };
      meta: object;
    }>;
    create: TRPCMutationProcedure<{
      input: {
        name: string;
        description?: string | undefined;
        permissions?: string[] | undefined;
        org_id?: string | null | undefined;
      };
      output: {
        id: string;
        name: string;
        description: string;
        permissions: string[];
        is_system: boolean;
        org_id: string | null;
        created_at: string;
        updated_at: string;
      };
      meta: object;
    }>;
    update: TRPCMutationProcedure<{
      input: {
        id: string;
        name?: string | undefined;
        description?: string | undefined;
        permissions?: string[] | undefined;
      };
      output: {
        id: string;
        name: string;
        description: string;
        permissions: string[];
        is_system: boolean;
        org_id: string | null;
        created_at: string;
        updated_at: string;
      };
      meta: object;
    }>;
    delete: TRPCMutationProcedure<{
      input: {
        id: string;
      };
      output: {
        message: string;
      };
      meta: object;
    }>;
  };
  organizations: {
    list: TRPCQueryProcedure<{
      input: {
        current?: number | undefined;
        page_size?: number | undefined;
        search?: string | undefined;
      };
      output: {
        data: {
          id: string;
          name: string;
          description: string;
          status: "active" | "disabled";
          created_at: string;
          updated_at: string;
        }[];
        total: number;
        current: number;
        page_size: number;
      };
      meta: object;
    }>;
    mine: TRPCQueryProcedure<{
      input: {
        current?: number | undefined;
        page_size?: number | undefined;
        search?: string | undefined;
      };
      output: {
        data: {
          id: string;
          name: string;
          description: string;
          status: "active" | "disabled";
          created_at: string;
          updated_at: string;
        }[];
        total: number;
        current: number;
        page_size: number;
      };
      meta: object;
    }>;
    get: TRPCQueryProcedure<{
      input: {
        id: string;
      };
      output: {
        id: string;
        name: string;
        description: string;
        status: "active" | "disabled";
        created_at: string;
        updated_at: string;
        members: {
          user_id: string;
          username: string;
          roles: {
            id: string;
            name: string;
          }[];
          created_at: string;
        }[];
      };
      meta: object;
    }>;
    create: TRPCMutationProcedure<{
      input: {
        name: string;
        description?: string | undefined;
        status?: "active" | "disabled" | undefined;
      };
      output: {
        id: string;
        name: string;
        description: string;
        status: "active" | "disabled";
        created_at: string;
        updated_at: string;
        members: {
          user_id: string;
          username: string;
          roles: {
            id: string;
            name: string;
          }[];
          created_at: string;
        }[];
      };
      meta: object;
    }>;
    update: TRPCMutationProcedure<{
      input: {
        id: string;
        name?: string | undefined;
        description?: string | undefined;
        status?: "active" | "disabled" | undefined;
      };
      output: {
        id: string;
        name: string;
        description: string;
        status: "active" | "disabled";
        created_at: string;
        updated_at: string;
        members: {
          user_id: string;
          username: string;
          roles: {
            id: string;
            name: string;
          }[];
          created_at: string;
        }[];
      };
      meta: object;
    }>;
    delete: TRPCMutationProcedure<{
      input: {
        id: string;
      };
      output: {
        message: string;
      };
      meta: object;
    }>;
    setMember: TRPCMutationProcedure<{
      input: {
        id: string;
        user_id: string;
        role_ids?: string[] | undefined;
      };
      output: {
        id: string;
        name: string;
        description: string;
        status: "active" | "disabled";
        created_at: string;
        updated_at: string;
        members: {
          user_id: string;
          username: string;
          roles: {
            id: string;
            name: string;
          }[];
          created_at: string;
        }[];
      };
      meta: object;
    }>;
    removeMember: TRPCMutationProcedure<{
      input: {
        id: string;
        userId: string;
      };
      output: {
        message: string;
      };
      meta: object;
    }>;
  };
  permissions: {
    list: TRPCQueryProcedure<{
      input: {
        scope?: "organization" | undefined;
      } | undefined;
      output: {
        code: string;
        name: string;
        module: string;
      }[];
      meta: object;
    }>;
  };
  settings: {
    get: TRPCQueryProcedure<{
      input: Record<string, never> | undefined;
      output: {
        [x: string]: string;
      };
      meta: object;
    }>;
    definitions: TRPCQueryProcedure<{
      input: Record<string, never> | undefined;
      output: {
        key: string;
        description: string;
        type: "string" | "boolean" | "enum" | "integer";
        secret: boolean;
        default: string | null;
        min: number | null;
        max: number | null;
        values: string[] | null;
      }[];
      meta: object;
    }>;
    update: TRPCMutationProcedure<{
      input: {
        [x: string]: string | number | boolean;
      };
      output: {
        [x: string]: string;
      };
      meta: object;
    }>;
  };
  smtp: {
    get: TRPCQueryProcedure<{
      input: Record<string, never> | undefined;
      output: {
        host: string;
        port: number;
        username: string;
        from_email: string;
        from_name: string;
        use_tls: boolean;
        use_ssl: boolean;
      };
      meta: object;
    }>;
    update: TRPCMutationProcedure<{
      input: {
        host: string;
        port: number;
        password: string;
        from_email: string;
        username?: string | undefined;
        from_name?: string | undefined;
        use_tls?: boolean | undefined;
        use_ssl?: boolean | undefined;
      };
      output: {
        host: string;
        port: number;
        username: string;
        from_email: string;
        from_name: string;
        use_tls: boolean;
        use_ssl: boolean;
      };
      meta: object;
    }>;
    test: TRPCMutationProcedure<{
      input: {
        to: string;
        subject: string;
        body: string;
      };
      output: {
        message: string;
      };
      meta: object;
    }>;
  };
  audit: {
    list: TRPCQueryProcedure<{
      input: {
        current?: number | undefined;
        page_size?: number | undefined;
        user_id?: string | undefined;
        action?: string | undefined;
        resource_type?: string | undefined;
        start_time?: string | undefined;
        end_time?: string | undefined;
      };
      output: {
        data: {
          id: string;
          created_at: string;
          user_id: string | null;
          username: string;
          action: string;
          resource_type: string;
          resource_id: string;
          status: "success" | "failure";
          ip: string;
          user_agent: string;
          org_id: string | null;
          details: Record<string, unknown>;
        }[];
        total: number;
        current: number;
        page_size: number;
      };
      meta: object;
    }>;
    verify: TRPCQueryProcedure<{
      input: Record<string, never> | undefined;
      output: {
        intact: boolean;
        first_seq: number;
        verified_seq: number;
        checkpoint: number | null;
        checkpoint_seq: number | null;
        broken: {
          seq: number;
          kind: "checkpoint" | "edited" | "removed" | "inserted" | "reordered";
          reason: string;
        } | null;
      };
      meta: object;
    }>;
    checkpoints: TRPCQueryProcedure<{
      input: {
        current?: number | undefined;
        page_size?: number | undefined;
      };
      output: {
        data: {
          number: number;
          size: number;
          hash: string;
          time: string;
          removed_through: number;
          removed_hash: string;
          signature: string;
        }[];
        total: number;
        current: number;
        page_size: number;
      };
      meta: object;
    }>;
    publicKey: TRPCQueryProcedure<{
      input: Record<string, never> | undefined;
      output: {
        algorithm: "Ed25519";
        public_key: string;
      };
      meta: object;
    }>;
  };
  tasks: {
    list: TRPCQueryProcedure<{
      input: {
        current?: number | undefined;
        page_size?: number | undefined;
        search?: string | undefined;
        status?: "success" | "pending" | "running" | "failed" | "cancelled" | undefined;
        type?: string | undefined;
      };
      output: {
        data: {
          id: string;
          type: string;
          status: "success" | "pending" | "running" | "failed" | "cancelled";
          category: "user" | "system";
          payload: string;
          progress: number;
          result: string | null;
          error: string | null;
          retry_count: number;
          max_retries: number;
          creator_id: string | null;
          cron_schedule_id: string | null;
          artifact_file_key: string | null;
          artifact_file_name: string | null;
          org_id: string | null;
          created_at: string;
          updated_at: string;
          started_at: string | null;
          finished_at: string | null;
        }[];
        total: number;
        current: number;
        page_size: number;
      };
      meta: object;
    }>;
    counts: TRPCQueryProcedure<{
      input: Record<string, never> | undefined;
      output: {
        pending: number;
        running: number;
        success: number;
        failed: number;
        cancelled: number;
      };
      meta: object;
    }>;
    get: TRPCQueryProcedure<{
      input: {
        id: string;
      };
      output: {
        id: string;
        type: string;
        status: "success" | "pending" | "running" | "failed" | "cancelled";
        category: "user" | "system";
        payload: string;
        progress: number;
        result: string | null;
        error: string | null;
        retry_count: number;
        max_retries: number;
        creator_id: string | null;
        cron_schedule_id: string | null;
        artifact_file_key: string | null;
        artifact_file_name: string | null;
        org_id: string | null;
        created_at: string;
        updated_at: string;
        started_at: string | null;
        finished_at: string | null;
      };
      meta: object;
    }>;
    logs: TRPCQueryProcedure<{
      input: {
        id: string;
        current?: number | undefined;
        page_size?: number | undefined;
      };
      output: {
        data: {
          id: string;
          task_id: string;
          level: "error" | "info" | "warn";
          message: string;
          created_at: string;
        }[];
        total: number;
        current: number;
        page_size: number;
      };
      meta: object;
    }>;
    cancel: TRPCMutationProcedure<{
      input: {
        id: string;
      };
      output: {
        id: string;
        type: string;
        status: "success" | "pending" | "running" | "failed" | "cancelled";
        category: "user" | "system";
        payload: string;
        progress: number;
        result: string | null;
        error: string | null;
        retry_count: number;
        max_retries: number;
        creator_id: string | null;
        cron_schedule_id: string | null;
        artifact_file_key: string | null;
        artifact_file_name: string | null;
        org_id: string | null;
        created_at: string;
        updated_at: string;
        started_at: string | null;
        finished_at: string | null;
      };
      meta: object;
    }>;
    retry: TRPCMutationProcedure<{
      input: {
        id: string;
      };
      output: {
        id: string;
        type: string;
        status: "success" | "pending" | "running" | "failed" | "cancelled";
        category: "user" | "system";
        payload: string;
        progress: number;
        result: string | null;
        error: string | null;
        retry_count: number;
        max_retries: number;
        creator_id: string | null;
        cron_schedule_id: string | null;
        artifact_file_key: string | null;
        artifact_file_name: string | null;
        org_id: string | null;
        created_at: string;
        updated_at: string;
        started_at: string | null;
        finished_at: string | null;
      };
      meta: object;
    }>;
    delete: TRPCMutationProcedure<{
      input: {
        id: string;
      };
      output: {
        message: string;
      };
      meta: object;
    }>;
    recent: TRPCQueryProcedure<{
      input: Record<string, never> | undefined;
      output: {
        id: string;
        type: string;
        status: "success" | "pending" | "running" | "failed" | "cancelled";
        category: "user" | "system";
        payload: string;
        progress: number;
        result: string | null;
        error: string | null;
        retry_count: number;
        max_retries: number;
        creator_id: string | null;
        cron_schedule_id: string | null;
        artifact_file_key: string | null;
        artifact_file_name: string | null;
        org_id: string | null;
        created_at: string;
        updated_at: string;
        started_at: string | null;
        finished_at: string | null;
      }[];
      meta: object;
    }>;
    eventsTicket: TRPCMutationProcedure<{
      input: Record<string, never> | undefined;
      output: {
        ticket: string;
        expires_at: string;
      };
      meta: object;
    }>;
    events: TRPCSubscriptionProcedure<{
      input: {
        task_id?: string | undefined;
        org_id?: string | undefined;
        lastEventId?: string | null | undefined;
      } | undefined;
      output: AsyncIterable<TrackedData<{
        id: string;
        task: {
          id: string;
          type: string;
          status: "success" | "pending" | "running" | "failed" | "cancelled";
          category: "user" | "system";
          payload: string;
          progress: number;
          result: string | null;
          error: string | null;
          retry_count: number;
          max_retries: number;
          creator_id: string | null;
          cron_schedule_id: string | null;
          artifact_file_key: string | null;
          artifact_file_name: string | null;
          org_id: string | null;
          created_at: string;
          updated_at: string;
          started_at: string | null;
          finished_at: string | null;
        };
      }>, void, any>;
      meta: object;
    }>;
    logStorageBackends: TRPCQueryProcedure<{
      input: Record<string, never> | undefined;
      output: {
        id: string;
        name: string;
      }[];
      meta: object;
    }>;
  };
  schedules: {
    list: TRPCQueryProcedure<{
      input: Record<string, never> | undefined;
      output: {
        id: string;
        name: string;
        spec: string;
        task_type: string;
        timezone: string;
        enabled: boolean;
        next_run: string | null;
        last_run: string | null;
      }[];
      meta: object;
    }>;
    toggle: TRPCMutationProcedure<{
      input: {
        id: string;
        enabled?: boolean | undefined;
      };
      output: {
        id: string;
        name: string;
        spec: string;
        task_type: string;
        timezone: string;
        enabled: boolean;
        next_run: string | null;
        last_run: string | null;
      };
      meta: object;
    }>;
    trigger: TRPCMutationProcedure<{
      input: {
        id: string;
      };
      output: {
        id: string;
        type: string;
        status: "success" | "pending" | "running" | "failed" | "cancelled";
        category: "user" | "system";
        payload: string;
        progress: number;
        result: string | null;
        error: string | null;
        retry_count: number;
        max_retries: number;
        creator_id: string | null;
        cron_schedule_id: string | null;
        artifact_file_key: string | null;
        artifact_file_name: string | null;
        org_id: string | null;
        created_at: string;
        updated_at: string;
        started_at: string | null;
        finished_at: string | null;
      };
      meta: object;
    }>;
  };
  files: {
    sign: TRPCQueryProcedure<{
      input: {
        fileKey: string;
      };
      output: {
        url: string;
        expires_at: string;
      };
      meta: object;
    }>;
  };
  userExport: {
    start: TRPCMutationProcedure<{
      input: {
        search?: string | undefined;
      };
      output: {
        id: string;
        type: string;
        status: "success" | "pending" | "running" | "failed" | "cancelled";
        category: "user" | "system";
        payload: string;
        progress: number;
        result: string | null;
        error: string | null;
        retry_count: number;
        max_retries: number;
        creator_id: string | null;
        cron_schedule_id: string | null;
        artifact_file_key: string | null;
        artifact_file_name: string | null;
        org_id: string | null;
        created_at: string;
        updated_at: string;
        started_at: string | null;
        finished_at: string | null;
      };
      meta: object;
    }>;
  };
}>;

/** Every procedure's input, by path: `RouterInputs['users']['create']`. */
export type RouterInputs = inferRouterInputs<AppRouter>;

/** Every procedure's output, by path: `RouterOutputs['users']['list']`. */
export type RouterOutputs = inferRouterOutputs<AppRouter>;
