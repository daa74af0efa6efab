#!/usr/bin/env node
// The `console` command: runs the TypeScript CLI through tsx, so no build step is needed.
import { register } from 'tsx/esm/api';

register();
await import('../server/cli.ts');
