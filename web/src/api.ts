import { MutationCache, QueryCache, QueryClient } from '@tanstack/react-query';
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink, TRPCClientError } from '@trpc/client';
import { createTRPCContext } from '@trpc/tanstack-react-query';
import type { AppRouter } from 'console-admin/client';
import { EventSource } from 'eventsource';
import { serviceRoot } from './config.ts';
import { connectivity } from './connectivity.ts';
import { currentLanguage } from './i18n/index.tsx';
import { orgScope } from './org-scope.ts';
import { session } from './session.ts';

export type ApiError = TRPCClientError<AppRouter>;

/** The service's code (E4011...) of a failed call; undefined when the service did not answer it. */
export const appCodeOf = (error: unknown): string | undefined =>
  error instanceof TRPCClientError ? (error as ApiError).shape?.appCode : undefined;

/** The service's message for a failed call, in the language the UI asked for. */
export const messageOf = (error: unknown): string =>
  (error instanceof TRPCClientError ? (error as ApiError).shape?.err : undefined) ?? String(error);

// A 502-504 from a proxy in front of the service is not an answer of ours either.
const unanswered = (error: unknown) =>
  error instanceof TRPCClientError && (!(error as ApiError).shape || [502, 503, 504].includes(error.data?.httpStatus));

function headers() {
  const token = session.token();
  return { 'accept-language': currentLanguage, ...(token ? { authorization: `Bearer ${token}` } : {}) };
}

/** Every call acts in the organization chosen in the header's switcher. */
function scopedHeaders() {
  const org = orgScope.get();
  return { ...headers(), ...(org ? { 'x-scope-orgid': org } : {}) };
}

// The switcher's own list goes unscoped: an organization the caller has left must not keep it from loading.
const UNSCOPED = new Set(['organizations.mine']);

// A failure of a sign-in call itself (password, MFA code, OAuth callback) is its page's to explain; any other 401
// means the session is over.
const SIGN_IN_CALLS = new Set(['auth.login', 'oauth.callback']);
function onError(error: unknown) {
  if (unanswered(error)) return connectivity.lost();
  if (error instanceof TRPCClientError && error.data?.httpStatus === 401 && !SIGN_IN_CALLS.has(error.data.path))
    session.end('session_expired');
}

export const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError }),
  mutationCache: new MutationCache({ onError }),
  defaultOptions: {
    queries: {
      // A refused call (4xx) does not change when asked again; an unreachable service is retried by the probe.
      retry: (count, error) => count < 2 && !unanswered(error) && !((error as ApiError).data?.httpStatus! < 500),
      refetchOnWindowFocus: false,
    },
  },
});
connectivity.onRecover(() => void queryClient.invalidateQueries());
// Every answer may differ in another organization.
orgScope.subscribe(() => void queryClient.invalidateQueries());

const url = `${serviceRoot}trpc`;
export const trpcClient = createTRPCClient<AppRouter>({
  links: [
    splitLink({
      condition: (op) => op.type === 'subscription',
      // EventSource cannot send a header; this one (eventsource, on fetch) sends the token as one, not in the URL.
      true: httpSubscriptionLink({
        url,
        EventSource,
        eventSourceOptions: () => ({
          fetch: (input: string | URL | Request, init?: RequestInit) =>
            fetch(input, { ...init, headers: { ...init?.headers, ...scopedHeaders() } }),
        }),
      }),
      false: splitLink({
        condition: (op) => UNSCOPED.has(op.path),
        true: httpBatchLink({ url, headers }),
        false: httpBatchLink({ url, headers: scopedHeaders }),
      }),
    }),
  ],
});

export const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();
