import { MantineProvider } from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from 'react-router';
import { queryClient, trpcClient, TRPCProvider } from './api.ts';
import { I18nProvider } from './i18n/index.tsx';
import { router } from './routes.tsx';

// The page's CSP allows no inline <style>: Mantine's default theme variables and its responsive classes come
// from its stylesheet (and app.css) instead of the <style> elements the provider would add, and dialogs are
// opened with lockScroll off (its scroll lock adds a <style> element too).
export function App() {
  return (
    <MantineProvider defaultColorScheme="auto" withCssVariables={false} withGlobalClasses={false}>
      <Notifications />
      <I18nProvider>
        <QueryClientProvider client={queryClient}>
          <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
            <RouterProvider router={router} />
          </TRPCProvider>
        </QueryClientProvider>
      </I18nProvider>
    </MantineProvider>
  );
}
