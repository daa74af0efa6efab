import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) =>
    scryptCb(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))),
  );

const R = 8;
const P = 1;
const KEYLEN = 32;
const maxmem = (n: number) => 256 * n * R + 1024 * 1024;

/** scrypt hashes in a self-describing form (`scrypt$N$r$p$salt$hash`), so the cost can change without breaking old hashes. */
export class PasswordHasher {
  /** How long the last hash of this process took. */
  private lastMs?: number;

  constructor(private readonly cost: number) {}

  async hash(password: string): Promise<string> {
    const salt = randomBytes(16);
    const started = performance.now();
    const key = await scrypt(password, salt, KEYLEN, { N: this.cost, r: R, p: P, maxmem: maxmem(this.cost) });
    this.lastMs = performance.now() - started;
    return `scrypt$${this.cost}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
  }

  async verify(password: string, stored: string): Promise<boolean> {
    const [kind, n, r, p, salt, hash] = stored.split('$');
    if (kind !== 'scrypt' || !salt || !hash) return false;
    const N = Number(n);
    const expected = Buffer.from(hash, 'base64');
    const started = performance.now();
    const key = await scrypt(password, Buffer.from(salt, 'base64'), expected.length, {
      N,
      r: Number(r),
      p: Number(p),
      maxmem: maxmem(N),
    });
    this.lastMs = performance.now() - started;
    return timingSafeEqual(key, expected);
  }

  /** Spends the same time as a real check, so an unknown username cannot be told apart by timing. */
  async burn(password: string): Promise<void> {
    await this.hash(password);
  }

  /**
   * Waits as long as a check takes, without checking anything: a refusal that needs no hash (a locked account)
   * then takes no less time than one that does. The first wait of a process, with nothing measured yet, hashes.
   */
  async stall(): Promise<void> {
    if (this.lastMs === undefined) return this.burn('');
    await new Promise((resolve) => setTimeout(resolve, this.lastMs));
  }
}
