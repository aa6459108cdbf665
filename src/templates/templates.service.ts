import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { DeletedResponse } from '../common/openapi/error-envelope.response';
import { ApiException } from '../common/errors/api-exception';
import { decodeCursor, Page, pageOf } from '../common/pagination/pagination';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ContactsService } from '../contacts/contacts.service';
import { newId } from '../database/id';
import { CreateTemplateDto } from './dto/create-template.dto';
import { ListTemplatesQueryDto } from './dto/list-templates.query';
import { PreviewTemplateDto } from './dto/preview-template.dto';
import { UpdateTemplateDto } from './dto/update-template.dto';
import { TemplatePreviewResponse, TemplateResponse } from './dto/template.response';
import { Template } from './template.entity';
import {
  buildRenderContext,
  RenderedContent,
  RenderLimitError,
  RenderSource,
  TemplateRenderer,
  TemplateRenderError,
} from './template-renderer';
import { TemplatesRepository } from './templates.repository';
import { ReadDatabase } from '../database/read-database';

/** What rendering needs to know about a recipient. */
export interface RenderRecipient {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
}

@Injectable()
export class TemplatesService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    /** Reads that tolerate lag: list pages (docs/scaling.md). */
    private readonly read: ReadDatabase,
    private readonly templates: TemplatesRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly renderer: TemplateRenderer,
    private readonly contacts: ContactsService,
  ) {}

  async create(projectId: string, dto: CreateTemplateDto): Promise<TemplateResponse> {
    await this.assertRenderable(projectId, { subject: dto.subject, body: dto.body });
    const row = await this.templates.insert(this.dataSource.manager, {
      id: newId(),
      projectId,
      name: dto.name,
      subject: dto.subject,
      body: dto.body,
      type: dto.type,
      fromEmail: dto.from ?? null,
      fromName: dto.fromName ?? null,
      replyTo: dto.replyTo ?? null,
      track: dto.track ?? false,
    });
    return toTemplateResponse(row);
  }

  async list(projectId: string, query: ListTemplatesQueryDto): Promise<Page<TemplateResponse>> {
    const limit = query.limit ?? 20;
    const afterId = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total } = await this.templates.list(
      this.read.manager,
      projectId,
      { type: query.type, search: query.search },
      afterId,
      limit,
    );
    return pageOf(rows, limit, total, toTemplateResponse, (row) => row.id);
  }

  async get(projectId: string, id: string): Promise<TemplateResponse> {
    return toTemplateResponse(await this.findOrFail(projectId, id));
  }

  async update(projectId: string, id: string, dto: UpdateTemplateDto): Promise<TemplateResponse> {
    await this.assertRenderable(projectId, { subject: dto.subject ?? '', body: dto.body ?? '' });
    return this.dataSource.transaction(async (manager) => {
      const row = await this.templates.lockById(manager, projectId, id);
      if (!row) throw ApiException.notFound('template', id);
      applyChanges(row, dto);
      return toTemplateResponse(await this.templates.update(manager, row));
    });
  }

  /** One statement: of concurrent deletes of one template, one answers 200 and the rest 404. */
  async remove(projectId: string, id: string): Promise<DeletedResponse> {
    const deleted = await this.templates.delete(this.dataSource.manager, projectId, id);
    if (!deleted) throw ApiException.notFound('template', id);
    return { id, deleted: true };
  }

  /** Renders a stored template for a contact (or a sample one) without sending anything. */
  async preview(
    projectId: string,
    id: string,
    dto: PreviewTemplateDto,
  ): Promise<TemplatePreviewResponse> {
    const template = await this.findOrFail(projectId, id);
    const contact: RenderRecipient = dto.contactId
      ? await this.contacts.get(projectId, dto.contactId)
      : SAMPLE_RECIPIENT;
    try {
      return await this.render(
        projectId,
        { subject: dto.subject ?? template.subject, body: dto.body ?? template.body },
        contact,
        dto.data ?? {},
        `${this.config.publicUrl}/unsubscribe/preview`,
      );
    } catch (error) {
      throw renderFailure(error);
    }
  }

  /** The stored template of this project, or 404 TEMPLATE_NOT_FOUND. `id` is a UUID (IdParamDto, the DTOs' IsUUID). */
  async findOrFail(
    projectId: string,
    id: string,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<Template> {
    const row = await this.templates.findById(manager, projectId, id);
    if (!row) throw ApiException.notFound('template', id);
    return row;
  }

  /** Liquid text with a recipient's render context, unescaped (workflow WEBHOOK steps). */
  renderText(
    projectId: string,
    source: string,
    contact: RenderRecipient,
    data: Record<string, unknown> | null,
    unsubscribeUrl: string,
  ): Promise<string> {
    return this.renderer.renderText(
      source,
      buildRenderContext({ email: contact.email, contact, data, unsubscribeUrl }),
      projectId,
    );
  }

  /**
   * Save-time check that a template renders within the render pool's limits with empty data:
   * 422 invalid_template when it is stopped by the deadline or heap cap. Other render errors
   * depend on the recipient's data, so they are left to preview and send. Runs before any
   * transaction: a render never holds a connection. A project over its budget of expensive work
   * is answered 429 (ApiException), not saved unchecked.
   */
  async assertRenderable(projectId: string, source: RenderSource): Promise<void> {
    try {
      await this.render(
        projectId,
        source,
        SAMPLE_RECIPIENT,
        {},
        `${this.config.publicUrl}/unsubscribe/preview`,
      );
    } catch (error) {
      if (error instanceof RenderLimitError) throw renderFailure(error);
      if (error instanceof ApiException) throw error;
    }
  }

  /** The Liquid parse error of a source, or null. */
  liquidError(source: string): string | null {
    return this.renderer.validate(source);
  }

  /** One recipient's message: the shared render used by send, campaigns and workflows. */
  render(
    projectId: string,
    source: RenderSource,
    contact: RenderRecipient,
    data: Record<string, unknown> | null,
    unsubscribeUrl: string,
  ): Promise<RenderedContent> {
    return this.renderer.render(
      source,
      buildRenderContext({ email: contact.email, contact, data, unsubscribeUrl }),
      projectId,
    );
  }
}

/** The recipient of previews without a contact and of save-time checks. */
const SAMPLE_RECIPIENT: RenderRecipient = {
  id: '00000000-0000-0000-0000-000000000000',
  email: 'preview@example.com',
  subscribed: true,
  data: {},
};

/** A render that exceeds a limit is the caller's template problem: 422 on the failing part. */
export function renderFailure(error: unknown): unknown {
  if (error instanceof TemplateRenderError) {
    return ApiException.validation(
      [
        {
          field: error.part,
          message: `${error.part} could not be rendered: ${error.message}`,
          code: 'invalid_template',
        },
      ],
      'The template could not be rendered',
    );
  }
  return error;
}

export function toTemplateResponse(row: Template): TemplateResponse {
  return {
    id: row.id,
    name: row.name,
    subject: row.subject,
    body: row.body,
    type: row.type,
    from: row.fromEmail,
    fromName: row.fromName,
    replyTo: row.replyTo,
    track: row.track,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** PATCH semantics: absent fields stay; from, fromName and replyTo may be cleared with null. */
function applyChanges(row: Template, dto: UpdateTemplateDto): void {
  if (dto.name !== undefined) row.name = dto.name;
  if (dto.subject !== undefined) row.subject = dto.subject;
  if (dto.body !== undefined) row.body = dto.body;
  if (dto.type !== undefined) row.type = dto.type;
  if (dto.from !== undefined) row.fromEmail = dto.from;
  if (dto.fromName !== undefined) row.fromName = dto.fromName;
  if (dto.replyTo !== undefined) row.replyTo = dto.replyTo;
  if (dto.track !== undefined) row.track = dto.track;
}
