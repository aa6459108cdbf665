import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Queue } from 'bullmq';
import { generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { DataSource, EntityManager } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { ApiException } from '../common/errors/api-exception';
import { DeletedResponse } from '../common/openapi/error-envelope.response';
import { decodeCursor, Page, pageOf } from '../common/pagination/pagination';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { newId } from '../database/id';
import { sqlState, SQLSTATE } from '../database/postgres-errors';
import { DOMAIN_JOBS, DomainCheckJobData, domainCheckJobId } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { DnsRecordStatus, Domain, DomainStatus } from './domain.entity';
import { normalizeDomainName, senderDomainOf } from './domain-name';
import { recordResponses, RETURN_PATH_PREFIX } from './domain-records';
import { DomainVerificationService } from './domain-verification.service';
import { DKIM_KEY_BOX } from './domains.constants';
import { DomainsRepository, NewDomain, SenderRead, SenderRow } from './domains.repository';
import { DomainResponse } from './dto/domain.response';
import { ListDomainsQueryDto } from './dto/list-domains.query';

const generateKeyPairAsync = promisify(generateKeyPair);

/** What a sender needs to sign a message: answer of DomainsService.assertCanSend. */
export interface SenderDomain {
  domainId: string;
  domain: string;
  /**
   * `bounces.<domain>` once the domain's RETURN_PATH CNAME is verified: the
   * envelope sender's domain, aligned with the From domain. Null until then
   * (the envelope sender is on RETURN_PATH_DOMAIN).
   */
  returnPathDomain: string | null;
  dkim: {
    domainName: string;
    keySelector: string;
    /** PKCS#8 PEM, for nodemailer's `dkim` option. Never log it, never return it over HTTP. */
    privateKey: string;
  };
}

@Injectable()
export class DomainsService {
  private readonly logger = new Logger(DomainsService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly domains: DomainsRepository,
    @Inject(DKIM_KEY_BOX) private readonly keyBox: SecretBox,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.DOMAINS)
    private readonly queue: Queue<DomainCheckJobData, unknown, typeof DOMAIN_JOBS.CHECK>,
    private readonly verification: DomainVerificationService,
  ) {}

  /**
   * Adds a domain: a fresh 2048-bit DKIM key (sealed at rest), an ownership
   * token, and a DNS check queued for right after the answer.
   */
  async create(projectId: string, input: string): Promise<DomainResponse> {
    const name = normalizeDomainName(input);
    if (!name.ok) {
      throw ApiException.validation([
        {
          field: 'domain',
          message: name.reason,
          code: name.tooLong ? 'too_big' : 'invalid_string',
        },
      ]);
    }
    // Before the key: generating it takes a noticeable while, a duplicate should not wait for it.
    if (await this.domains.exists(this.dataSource.manager, projectId, name.domain))
      throw duplicate(name.domain);
    const id = newId();
    const { publicKey, privateKey } = await generateKeyPairAsync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'der' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const fields: NewDomain = {
      id,
      projectId,
      domain: name.domain,
      status: DomainStatus.PENDING,
      ownershipToken: randomBytes(16).toString('hex'),
      // Random per domain: two projects may hold the same domain, each with its own key record.
      dkimSelector: `mw${randomBytes(5).toString('hex')}`,
      dkimPublicKey: publicKey.toString('base64'),
      dkimPrivateKeySealed: this.keyBox.seal(privateKey, id),
      recordStatuses: {},
      recordProblems: {},
      lastCheckedAt: null,
      verifiedAt: null,
    };
    let row: Domain;
    try {
      row = await this.domains.insert(this.dataSource.manager, fields);
    } catch (error) {
      if (isUniqueViolation(error)) throw duplicate(name.domain);
      throw error;
    }
    await this.enqueueFirstCheck(id);
    return toDomainResponse(row, this.config.returnPathDomain);
  }

  async list(projectId: string, query: ListDomainsQueryDto): Promise<Page<DomainResponse>> {
    const limit = query.limit ?? 20;
    const afterId = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total } = await this.domains.list(
      this.dataSource.manager,
      projectId,
      { status: query.status },
      afterId,
      limit,
    );
    return pageOf(
      rows,
      limit,
      total,
      (row) => toDomainResponse(row, this.config.returnPathDomain),
      (row) => row.id,
    );
  }

  async get(projectId: string, id: string): Promise<DomainResponse> {
    return toDomainResponse(await this.findOwned(projectId, id), this.config.returnPathDomain);
  }

  /** Checks the records now and answers with the result (POST /domains/{id}/verify). */
  async verify(projectId: string, id: string): Promise<DomainResponse> {
    const row = await this.findOwned(projectId, id);
    return toDomainResponse(
      await this.verification.check(row, new Date(), true),
      this.config.returnPathDomain,
    );
  }

  /**
   * Deleting drops the key too: assertCanSend refuses the domain from the next
   * call on. One statement: of concurrent deletes, one answers 200 and the rest 404.
   */
  async remove(projectId: string, id: string): Promise<DeletedResponse> {
    if (!(await this.domains.delete(this.dataSource.manager, projectId, id))) {
      throw ApiException.notFound('domain', id);
    }
    return { id, deleted: true };
  }

  /**
   * May this project send from this address? When the address's domain is a
   * VERIFIED domain of the project (exact match: a subdomain is a domain of
   * its own), answers its DKIM signing key. Otherwise, while
   * REQUIRE_VERIFIED_SENDER holds, throws 403 DOMAIN_NOT_VERIFIED naming the
   * domain's state and the way to fix it; when it does not (the outbox
   * default: nothing leaves the machine), answers null: send unsigned.
   *
   * No cache on purpose: one indexed lookup per call, so a delete, or a
   * domain turning FAILED, stops sending at once in every process. `read` is
   * that lookup made by the caller's own statement just before (the delivery
   * claim joins it: DomainsRepository.senderJoin); it is used when it looked
   * up this address's domain, else the row is read here. Only the AES key is
   * cached (derived once per process); opening the box is microseconds.
   */
  async assertCanSend(
    projectId: string,
    fromAddress: string,
    manager: EntityManager = this.dataSource.manager,
    read?: SenderRead,
  ): Promise<SenderDomain | null> {
    const domain = senderDomainOf(fromAddress);
    let row: SenderRow | null = null;
    if (domain && read?.lookup === domain) row = read.row;
    else if (domain) row = await this.domains.findSender(manager, projectId, domain);
    if (row?.status === DomainStatus.VERIFIED) {
      return {
        domainId: row.id,
        domain: row.domain,
        returnPathDomain: ownReturnPathDomain(row),
        dkim: {
          domainName: row.domain,
          keySelector: row.dkim_selector,
          privateKey: this.keyBox.openString(row.dkim_private_key_sealed, row.id),
        },
      };
    }
    if (domain && !this.config.requireVerifiedSender) return null;
    throw senderNotVerified(domain, row, this.config.smtpUrl === null);
  }

  /**
   * The `bounces.` domain mail from this address would use now: that of a
   * VERIFIED domain of the project whose RETURN_PATH record is verified,
   * else null (RETURN_PATH_DOMAIN). For showing mail not yet delivered.
   */
  async returnPathDomainOf(projectId: string, fromAddress: string): Promise<string | null> {
    const domain = senderDomainOf(fromAddress);
    if (!domain) return null;
    const row = await this.domains.findSender(this.dataSource.manager, projectId, domain);
    return row?.status === DomainStatus.VERIFIED ? ownReturnPathDomain(row) : null;
  }

  private async findOwned(projectId: string, id: string): Promise<Domain> {
    const row = await this.domains.findById(this.dataSource.manager, projectId, id);
    if (!row) throw ApiException.notFound('domain', id);
    return row;
  }

  /**
   * The row is committed; a queue outage must not turn a created domain into
   * an error, since the repeating sweep checks every PENDING domain anyway.
   */
  private async enqueueFirstCheck(domainId: string): Promise<void> {
    try {
      await this.queue.add(
        DOMAIN_JOBS.CHECK,
        { domainId },
        { jobId: domainCheckJobId(domainId), attempts: 3 },
      );
    } catch (error) {
      this.logger.warn(
        { domainId, err: error },
        'could not queue the first domain check; the sweep will run it',
      );
    }
  }
}

export function toDomainResponse(row: Domain, returnPathDomain: string): DomainResponse {
  return {
    id: row.id,
    domain: row.domain,
    status: row.status,
    records: recordResponses(
      row,
      returnPathDomain,
      row.recordStatuses ?? {},
      row.recordProblems ?? {},
    ),
    lastCheckedAt: row.lastCheckedAt ? row.lastCheckedAt.toISOString() : null,
    verifiedAt: row.verifiedAt ? row.verifiedAt.toISOString() : null,
    createdAt: row.createdAt.toISOString(),
  };
}

function ownReturnPathDomain(row: SenderRow): string | null {
  return row.return_path_status === DnsRecordStatus.VERIFIED
    ? `${RETURN_PATH_PREFIX}${row.domain}`
    : null;
}

const UNVERIFIED_HINT =
  'For local development without SMTP_URL, REQUIRE_VERIFIED_SENDER=false lets any sender through (unsigned, to the outbox).';

/** 403 DOMAIN_NOT_VERIFIED: what state the domain is in, and the next step out of it. */
function senderNotVerified(
  domain: string | null,
  row: SenderRow | null,
  outboxMode: boolean,
): ApiException {
  // Only where nothing leaves the machine: with SMTP, the caller is a tenant and the check is anti-spoofing.
  const hint = outboxMode ? ` ${UNVERIFIED_HINT}` : '';
  if (!domain) {
    return new ApiException(403, 'DOMAIN_NOT_VERIFIED', 'The sender address has no domain part', {
      suggestion:
        'Send from an address on a verified domain of this project, such as hello@example.com.',
    });
  }
  if (!row) {
    return new ApiException(
      403,
      'DOMAIN_NOT_VERIFIED',
      `The sender domain "${domain}" is not a domain of this project`,
      {
        suggestion: `Add it with POST /domains {"domain":"${domain}"}, publish the DNS records it answers and call POST /domains/{id}/verify.${hint}`,
      },
    );
  }
  const why =
    row.status === DomainStatus.FAILED
      ? 'its DNS records were not found within 72 hours, or were removed'
      : 'its DNS records have not been found yet';
  return new ApiException(
    403,
    'DOMAIN_NOT_VERIFIED',
    `The sender domain "${domain}" is ${row.status}: ${why}`,
    {
      suggestion: `GET /domains/${row.id} shows each record with what DNS answers; publish the missing ones, then call POST /domains/${row.id}/verify.${hint}`,
    },
  );
}

function duplicate(domain: string): ApiException {
  return ApiException.conflict(
    `The domain "${domain}" already exists in this project`,
    'Use the existing domain (GET /domains), or delete it first to start over with a new key.',
  );
}

function isUniqueViolation(error: unknown): boolean {
  return sqlState(error) === SQLSTATE.UNIQUE_VIOLATION;
}
