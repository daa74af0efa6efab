// Writes the OpenAPI document generated from the router: `node dist/tools/openapi-export.js FILE` (run by
// `npm run build`; the compiled server loads it instead of generating it at start), or stdout without FILE.
import { writeFileSync } from 'node:fs';
import { serviceDocument } from '../server/http/openapi.ts';

const text = `${JSON.stringify(serviceDocument('0.0.0', '/api'), null, 2)}\n`;
const file = process.argv[2];
if (file) writeFileSync(file, text);
else process.stdout.write(text);
