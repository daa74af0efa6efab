import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  to: string[];
  subject: string;
  text: string;
  html: string;
  /** Whether the session ran over TLS (STARTTLS or implicit). */
  secure: boolean;
}

export interface MailServer {
  port: number;
  received: ReceivedMail[];
  /** Credentials the server was given by each AUTH. */
  logins: { username: string; password: string }[];
  /** Resolves with the next message that arrives (or one already received beyond `after`). */
  next(after?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

/**
 * An in-process SMTP server (npm smtp-server, with its built-in self-signed certificate): `plain` offers no TLS,
 * `starttls` offers STARTTLS, `implicit` speaks TLS from the first byte. AUTH accepts `user`/`password` when given.
 */
export async function startMailServer(
  mode: 'plain' | 'starttls' | 'implicit',
  auth?: { username: string; password: string },
): Promise<MailServer> {
  const received: ReceivedMail[] = [];
  const logins: MailServer['logins'] = [];
  const waiters: (() => void)[] = [];
  const server = new SMTPServer({
    secure: mode === 'implicit',
    hideSTARTTLS: mode === 'plain',
    allowInsecureAuth: true,
    authOptional: !auth,
    logger: false,
    onAuth(a, _session, cb) {
      logins.push({ username: a.username ?? '', password: a.password ?? '' });
      if (auth && a.username === auth.username && a.password === auth.password) return cb(null, { user: a.username });
      cb(new Error('Invalid username or password'));
    },
    onData(stream, session, cb) {
      simpleParser(stream)
        .then((m) => {
          received.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            subject: m.subject ?? '',
            text: m.text ?? '',
            html: typeof m.html === 'string' ? m.html : '',
            secure: session.secure,
          });
          for (const w of waiters.splice(0)) w();
          cb();
        })
        .catch(cb);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    received,
    logins,
    async next(after = received.length) {
      const deadline = Date.now() + 5000;
      while (received.length <= after) {
        if (Date.now() > deadline) throw new Error('no mail arrived');
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
      return received[after]!;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
