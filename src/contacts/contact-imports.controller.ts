import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiExtraModels, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiListSuccess,
  ApiOp,
  ApiRequestContent,
  ApiSuccess,
} from '../common/openapi/decorators';
import { Page, PaginationQueryDto } from '../common/pagination/pagination';
import { IdParamDto } from '../common/validation/id.param';
import { ContactImportsService } from './contact-imports.service';
import { ContactImportResponse } from './dto/contact-import.response';
import { ImportContactsDto } from './dto/import-contacts.dto';

/**
 * Bulk import. `GET /contacts/imports/{id}` has three path segments, so the
 * router never hands it to `GET /contacts/{id}`.
 */
@ApiTags('contacts')
@ApiKeyProtected()
@Controller('contacts')
export class ContactImportsController {
  constructor(private readonly imports: ContactImportsService) {}

  @Post('import')
  @HttpCode(202)
  @ApiOp(
    'contacts_import',
    'Import contacts: JSON {contacts:[{email, subscribed?, data?}]} (≤ 10,000) or a CSV body (text/csv)',
    'Answers 202 with the import job; a queue worker does the work. Rows with problems are counted in `failed` and listed in `errors`.',
  )
  @ApiExtraModels(ImportContactsDto)
  @ApiRequestContent({
    'application/json': { $ref: getSchemaPath(ImportContactsDto) },
    'text/csv': {
      type: 'string',
      description:
        'A header row with an email column (any case), optional subscribed; other columns go into data',
    },
  })
  @ApiSuccess(202, ContactImportResponse)
  @ApiErrorResponses([400, 413, 422], {
    400: 'BAD_REQUEST: malformed JSON or CSV, or a content type other than application/json and text/csv',
  })
  // The body is either parsed JSON or CSV text; the service checks its shape and reports per-row errors.
  // The content type decides which: a JSON string body is not a CSV file.
  start(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() body: unknown,
    @Headers('content-type') contentType: string | undefined,
  ): Promise<ContactImportResponse> {
    const format = /^\s*text\/csv\s*(;|$)/i.test(contentType ?? '') ? 'csv' : 'json';
    return this.imports.start(project.id, body, format);
  }

  @Get('imports')
  @ApiOp('contacts_listImports', 'List imports, newest first')
  @ApiListSuccess(ContactImportResponse)
  @ApiErrorResponses([400])
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: PaginationQueryDto,
  ): Promise<Page<ContactImportResponse>> {
    return this.imports.list(project.id, query);
  }

  @Get('imports/:id')
  @ApiOp('contacts_getImport', 'Progress and per-row errors of an import')
  @ApiSuccess(200, ContactImportResponse)
  @ApiErrorResponses([400, 404])
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<ContactImportResponse> {
    return this.imports.get(project.id, params.id);
  }
}
