// Child process of the HTTP benchmark: the ceiling, a bare Fastify JSON route.
import Fastify from 'fastify';

const app = Fastify();
app.get('/bare', async () => ({ code: '0', data: { hello: 'world', n: 42 } }));
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.send!({ port: typeof address === 'object' && address ? address.port : 0 });
// The benchmark asks for this process's CPU time over IPC.
process.on('message', () => process.send?.(process.cpuUsage()));
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
