import { z } from 'zod';

export type Json = Record<string, unknown>;

export const isJsonObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A configured provider (`oauth.providers` in the configuration), as the OAuth service uses it. */
export interface OAuthProviderConfig {
  name: string;
  display_name?: string;
  client_id: string;
  client_secret: string;
  icon_url?: string;
  /** An OpenID provider's issuer, whose discovery document gives the addresses not configured here. */
  issuer?: string;
  auth_url?: string;
  token_url?: string;
  user_info_url?: string;
  redirect_url?: string;
  scopes: string;
  token_auth_method: 'client_secret_basic' | 'client_secret_post';
  role_field?: string;
  email_field: string;
  username_field: string;
  full_name_field: string;
  avatar_field: string;
  auto_create_user: boolean;
}

export interface OAuthOptions {
  enabled: boolean;
  providers: OAuthProviderConfig[];
  /** Time allowed for each call to a provider. */
  timeoutMs: number;
  /** `server.root_url`: where a browser lands after a login, and the base of default callback addresses. */
  rootUrl: string;
}

export const providerSchema = z
  .object({ name: z.string(), display_name: z.string(), icon_url: z.string().nullable() })
  .meta({ id: 'OAuthProvider' });

export const providerList = z.array(providerSchema);

export const providerName = z.string().min(1).max(64);

/**
 * What the provider sends back through the browser: a `code` or an `error`, with the `state` it was given, and
 * the `iss` of an OpenID provider that names itself (RFC 9207), checked against its issuer. Anything else
 * providers add (`scope`, `session_state`) is ignored.
 */
export const callbackParams = z.object({
  code: z.string().min(1).max(4096).optional(),
  state: z.string().min(1).max(4096),
  error: z.string().min(1).max(256).optional(),
  iss: z.string().min(1).max(2048).optional(),
});
export type CallbackParams = z.infer<typeof callbackParams>;
/** A single-page app posts the provider's answer with the provider's name from the path. */
export const oauthCallbackInput = callbackParams.extend({ name: providerName });
