// Writes config.example.yaml from the config schema (`npm run config-example`); test/config-example.test.ts
// fails while the committed file differs from what this writes.
import { writeFileSync } from 'node:fs';
import { configExample } from '../server/config/example.ts';

writeFileSync(new URL('../config.example.yaml', import.meta.url), configExample());
