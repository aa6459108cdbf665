import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import type { DeletedResponse } from '../common/openapi/error-envelope.response';
import type { Page } from '../common/pagination/pagination';
import { normalizeEmail } from '../common/validation/email';
import { ContactsService } from '../contacts/contacts.service';
import { newId } from '../database/id';
import { EmailsRepository } from '../sending/emails.repository';
import { BouncePolicy } from './bounce-policy';
import type { BounceResultResponse } from './dto/bounce-result.response';
import type { CreateBounceDto } from './dto/create-bounce.dto';
import type { ListSuppressionsQueryDto } from './dto/list-suppressions.query';
import { SuppressionResponse, toSuppressionResponse } from './dto/suppression.response';

/** POST /bounces and the suppressions list: the API's side of the bounce policy. */
@Injectable()
export class BouncesService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly policy: BouncePolicy,
    private readonly emails: EmailsRepository,
    private readonly contacts: ContactsService,
  ) {}

  /**
   * A report from the caller (source `api`), bound to the key's project: an
   * email id of another project, or an address with no email sent, is kept
   * as unmatched. Every call is a report of its own.
   */
  async report(projectId: string, dto: CreateBounceDto): Promise<BounceResultResponse> {
    if ((dto.emailId === undefined) === (dto.email === undefined)) {
      const field = dto.emailId === undefined ? 'emailId' : 'email';
      throw ApiException.validation([
        {
          field,
          message:
            dto.emailId === undefined
              ? 'emailId or email is required'
              : 'give emailId or email, not both',
          code: dto.emailId === undefined ? 'required' : 'custom',
        },
      ]);
    }
    const recipient = dto.email !== undefined ? normalizeEmail(dto.email) : null;
    const emailId =
      dto.emailId ??
      (await this.emails.latestSentTo(this.dataSource.manager, projectId, recipient as string));
    const outcome = await this.policy.apply({
      kind: dto.type,
      source: 'api',
      emailId,
      recipient,
      status: dto.status ?? null,
      diagnostic: dto.diagnostic ?? null,
      feedbackType: dto.type === 'complaint' ? 'abuse' : null,
      dedupeKey: `api-${newId()}`,
      projectId,
    });
    return { outcome, emailId: outcome === 'unmatched' ? null : emailId };
  }

  async listSuppressions(
    projectId: string,
    query: ListSuppressionsQueryDto,
  ): Promise<Page<SuppressionResponse>> {
    const page = await this.contacts.listSuppressed(
      projectId,
      query.reason,
      query.cursor,
      query.limit ?? 20,
    );
    return { ...page, items: page.items.map(toSuppressionResponse) };
  }

  async suppress(projectId: string, email: string): Promise<SuppressionResponse> {
    return toSuppressionResponse(await this.contacts.suppressByEmail(projectId, email));
  }

  unsuppress(projectId: string, contactId: string): Promise<DeletedResponse> {
    return this.contacts.unsuppress(projectId, contactId);
  }
}
