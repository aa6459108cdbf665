import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import { Page, PaginationQueryDto } from '../common/pagination/pagination';
import { ContactImportsService, ContactImportView } from './contact-imports.service';
import { IdParamDto } from './dto/contact.dto';

/**
 * Bulk import. `GET /contacts/imports/{id}` has three path segments, so the
 * router never hands it to `GET /contacts/{id}`.
 */
@ApiTags('contacts')
@Controller('contacts')
export class ContactImportsController {
  constructor(private readonly imports: ContactImportsService) {}

  @Post('import')
  @HttpCode(202)
  @ApiOperation({
    summary:
      'Import contacts: JSON {contacts:[{email, subscribed?, data?}]} (≤ 10,000) or a CSV body (text/csv)',
  })
  @ApiConsumes('application/json', 'text/csv')
  @ApiBody({
    schema: {
      oneOf: [
        {
          type: 'object',
          properties: { contacts: { type: 'array', items: { type: 'object' }, maxItems: 10000 } },
          required: ['contacts'],
        },
        { type: 'string', description: 'CSV with a header row and an email column' },
      ],
    },
  })
  // The body is either parsed JSON or CSV text; the service checks its shape and reports per-row errors.
  // The content type decides which: a JSON string body is not a CSV file.
  start(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() body: unknown,
    @Headers('content-type') contentType: string | undefined,
  ): Promise<ContactImportView> {
    const format = /^\s*text\/csv\s*(;|$)/i.test(contentType ?? '') ? 'csv' : 'json';
    return this.imports.start(project.id, body, format);
  }

  @Get('imports')
  @ApiOperation({ summary: 'List imports, newest first' })
  list(@CurrentProject() project: CurrentProjectInfo, @Query() query: PaginationQueryDto): Promise<Page<ContactImportView>> {
    return this.imports.list(project.id, query);
  }

  @Get('imports/:id')
  @ApiOperation({ summary: 'Progress and per-row errors of an import' })
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<ContactImportView> {
    return this.imports.get(project.id, params.id);
  }
}
