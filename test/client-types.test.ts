import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter as ClientRouter, RouterInputs, RouterOutputs } from '../client.ts';
import type { AppRouter } from '../routers/app-router.ts';
import { CLIENT_FILE, clientTypes } from '../tools/client-types.ts';

// Checked by the compiler (`tsc --noEmit`): the client entry's types are the router's, both ways.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const inputsMatch: Same<RouterInputs, inferRouterInputs<AppRouter>> = true;
const outputsMatch: Same<RouterOutputs, inferRouterOutputs<AppRouter>> = true;
const errorsMatch: Same<
  ClientRouter['_def']['_config']['$types']['errorShape'],
  AppRouter['_def']['_config']['$types']['errorShape']
> = true;

test('client.ts is what the router generates today (`npm run client-types` after changing a procedure)', () => {
  assert.ok(inputsMatch && outputsMatch && errorsMatch);
  assert.equal(readFileSync(CLIENT_FILE, 'utf8'), clientTypes());
});
