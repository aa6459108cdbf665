import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { DKIM_KEY_BOX } from './domains.constants';
import { DomainsRepository, SealedKeyRow } from './domains.repository';

/** A domain row whose sealed key is named in messages (never the key itself). */
export interface SealedKeyOwner {
  id: string;
  domain: string;
}

/** Which secret opens each stored DKIM key. */
export interface SealedKeysAudit {
  /** Sealed under the current APP_SECRET. */
  current: number;
  /** Opened only by a secret of APP_SECRET_PREVIOUS: `secrets rotate` re-seals them. */
  previous: number;
  /** Opened by none of the secrets. */
  unreadable: SealedKeyOwner[];
}

export interface RotationResult {
  resealed: number;
  alreadyCurrent: number;
}

/** Rows per round trip: bounds memory (a sealed 2048-bit key is ~1.7 kB) whatever the number of domains. */
const PAGE_SIZE = 500;

/**
 * Keys that no configured secret opens. The code lets the CLI report
 * APP_SECRET_MISMATCH rather than a generic error.
 */
export class UnreadableSealedKeysError extends Error {
  readonly code = 'APP_SECRET_MISMATCH';

  constructor(
    readonly owners: SealedKeyOwner[],
    advice: string,
  ) {
    super(`${describeUnreadable(owners)}. ${advice}`);
    this.name = 'UnreadableSealedKeysError';
  }
}

/**
 * The secrets stored sealed under APP_SECRET (today the DKIM private key of
 * each domain, bound to its row id): whether they still open, and re-sealing
 * them under the current secret after a rotation. The rows come from
 * DomainsRepository's sealed-key statements, which read only the columns
 * needed (the entity hides the sealed column from ordinary reads).
 */
@Injectable()
export class SealedKeysService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(DKIM_KEY_BOX) private readonly keyBox: SecretBox,
    private readonly domains: DomainsRepository,
  ) {}

  /** Tries every stored key; nothing is written. */
  async audit(): Promise<SealedKeysAudit> {
    const audit: SealedKeysAudit = { current: 0, previous: 0, unreadable: [] };
    await this.eachPage(this.dataSource.manager, false, (rows) => {
      for (const row of rows) {
        const opened = this.tryUnseal(row);
        if (!opened) audit.unreadable.push({ id: row.id, domain: row.domain });
        else if (opened.current) audit.current++;
        else audit.previous++;
        opened?.plaintext.fill(0);
      }
    });
    return audit;
  }

  /**
   * Re-seals every key that only a previous secret opens under the current
   * APP_SECRET, in one transaction with the rows locked. When any key opens
   * under none of the secrets, nothing is written and the error names them:
   * a half-rotated database would lose the keys the moment APP_SECRET_PREVIOUS
   * is dropped.
   */
  async rotate(): Promise<RotationResult> {
    return this.dataSource.transaction(async (manager) => {
      const result: RotationResult = { resealed: 0, alreadyCurrent: 0 };
      const unreadable: SealedKeyOwner[] = [];
      await this.eachPage(manager, true, async (rows) => {
        const ids: string[] = [];
        const boxes: Buffer[] = [];
        for (const row of rows) {
          const opened = this.tryUnseal(row);
          if (!opened) {
            unreadable.push({ id: row.id, domain: row.domain });
            continue;
          }
          if (opened.current) {
            result.alreadyCurrent++;
          } else {
            ids.push(row.id);
            boxes.push(this.keyBox.seal(opened.plaintext, row.id));
          }
          opened.plaintext.fill(0);
        }
        // Pages written before an unreadable key turns up are undone by the refusal below
        // (rollback); once one has, writing more is pointless.
        if (ids.length && !unreadable.length) {
          await this.domains.replaceSealedKeys(manager, ids, boxes);
          result.resealed += ids.length;
        }
      });
      if (unreadable.length) {
        throw new UnreadableSealedKeysError(
          unreadable,
          'Nothing was re-sealed. Add the earlier secret to APP_SECRET_PREVIOUS (comma-separated if several) and run `node dist/cli.js secrets rotate` again.',
        );
      }
      return result;
    });
  }

  private tryUnseal(row: SealedKeyRow): { plaintext: Buffer; current: boolean } | null {
    try {
      return this.keyBox.unseal(row.dkim_private_key_sealed, row.id);
    } catch {
      return null;
    }
  }

  /** Every domain row in id order, a page at a time; `lock` holds them until the transaction ends. */
  private async eachPage(
    manager: EntityManager,
    lock: boolean,
    visit: (rows: SealedKeyRow[]) => void | Promise<void>,
  ): Promise<void> {
    let after: string | null = null;
    for (;;) {
      const rows = await this.domains.sealedKeysPage(manager, after, PAGE_SIZE, lock);
      if (!rows.length) return;
      await visit(rows);
      if (rows.length < PAGE_SIZE) return;
      after = rows[rows.length - 1].id;
    }
  }
}

/** "2 sealed DKIM keys (domains a.test, b.test) open with neither …", naming at most 10 domains. */
function describeUnreadable(owners: SealedKeyOwner[]): string {
  const names = [...new Set(owners.map((owner) => owner.domain))];
  const shown =
    names.slice(0, 10).join(', ') + (names.length > 10 ? ` and ${names.length - 10} more` : '');
  const keys = owners.length === 1 ? '1 sealed DKIM key' : `${owners.length} sealed DKIM keys`;
  const domains = names.length === 1 ? `domain ${shown}` : `domains ${shown}`;
  return `${keys} (${domains}) ${owners.length === 1 ? 'opens' : 'open'} with neither APP_SECRET nor any secret in APP_SECRET_PREVIOUS`;
}
