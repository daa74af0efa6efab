import { Alert, Anchor, Loader } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { queryClient, useTRPC } from '../api.ts';
import { useI18n } from '../i18n/index.tsx';
import { session } from '../session.ts';
import { PublicCard, refusal, type SignInState } from './sign-in.tsx';

// The provider's redirect_url: the code, state and iss arrive in the query. They are read once (the code and state
// are single-use: a second mount must not post them again) and taken out of the address bar.
let taken = false;
function takeParams(): Record<string, string> | undefined {
  if (taken) return undefined;
  taken = true;
  const params = Object.fromEntries(new URLSearchParams(location.search));
  history.replaceState(history.state, '', location.pathname);
  return params;
}

/** Completes an OAuth login through POST /auth/oauth/:name/callback; an account with MFA goes on to its code step. */
export function Component() {
  const { t } = useI18n();
  const { name = '' } = useParams();
  const navigate = useNavigate();
  const trpc = useTRPC();
  const [incomplete, setIncomplete] = useState(false);
  const callback = useMutation(
    trpc.oauth.callback.mutationOptions({
      onSuccess: (answer) => {
        if ('mfa_required' in answer)
          return void navigate('/signin', { replace: true, state: { mfaToken: answer.mfa_token } as SignInState });
        queryClient.clear();
        session.start(answer.token);
        void navigate('/', { replace: true });
      },
    }),
  );
  const { mutate } = callback;
  useEffect(() => {
    const params = takeParams();
    if (!params) return;
    const { code, state, error, iss } = params;
    if (!state || !(code || error)) return setIncomplete(true);
    mutate({ name, state, ...(error ? { error } : { code }), ...(iss ? { iss } : {}) });
  }, [name, mutate]);

  return (
    <PublicCard title={t('oauth.title')}>
      {callback.error || incomplete ? (
        <Alert color="red" role="alert">
          {incomplete ? t('oauth.incomplete') : refusal(callback.error, t)}
        </Alert>
      ) : (
        <Loader aria-label={t('oauth.working')} />
      )}
      <Anchor component={Link} to="/signin" size="sm">
        {t('forgot.back')}
      </Anchor>
    </PublicCard>
  );
}
