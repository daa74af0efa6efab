import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

/**
 * A signed statement of the audit chain at one moment (docs/audit-chain.md): it held `size` records, the last
 * with `hash`, and the records up to `removed_through` (whose hash was `removed_hash`) had been removed by the
 * retention cleanup.
 */
export interface Checkpoint {
  number: number;
  size: number;
  hash: string;
  time: string;
  removed_through: number;
  removed_hash: string;
  /** Ed25519 over `checkpointNote(...)`, base64. */
  signature: string;
}

export type CheckpointBody = Omit<Checkpoint, 'signature'>;

/** The bytes a checkpoint's signature covers: six lines of UTF-8 text, each ending in a line feed. */
export function checkpointNote(c: CheckpointBody): Buffer {
  return Buffer.from(
    [
      'console audit checkpoint v1',
      `number ${c.number}`,
      `size ${c.size}`,
      `hash ${c.hash}`,
      `time ${c.time}`,
      `removed ${c.removed_through} ${c.removed_hash}`,
      '',
    ].join('\n'),
    'utf8',
  );
}

/** An Ed25519 private key from PEM, or from base64 / base64url of its PKCS#8 DER form. */
export function signingKeyFrom(text: string): KeyObject {
  const trimmed = text.trim();
  const key = trimmed.startsWith('-----')
    ? createPrivateKey(trimmed)
    : createPrivateKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'pkcs8' });
  if (key.asymmetricKeyType !== 'ed25519') throw new Error('audit.signing_key must be an Ed25519 private key');
  return key;
}

/** Signs checkpoints with one Ed25519 key; its public half is what anyone checks them with. */
export class CheckpointSigner {
  readonly publicKey: KeyObject;

  constructor(private readonly privateKey: KeyObject) {
    this.publicKey = createPublicKey(privateKey);
  }

  sign(body: CheckpointBody): Checkpoint {
    return { ...body, signature: sign(null, checkpointNote(body), this.privateKey).toString('base64') };
  }

  /** The public key as PEM (SPKI), as `GET /api/audit-logs/public-key` answers it. */
  publicKeyPem(): string {
    return this.publicKey.export({ format: 'pem', type: 'spki' }).toString();
  }
}

/** Whether the checkpoint's signature checks with `publicKey`. */
export function checkpointSigned(c: Checkpoint, publicKey: KeyObject): boolean {
  try {
    return verify(null, checkpointNote(c), publicKey, Buffer.from(c.signature, 'base64'));
  } catch {
    return false;
  }
}
