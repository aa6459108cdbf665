import { Readable } from 'node:stream';
import { Body, Controller, Delete, Get, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { RawResponse } from '../common/http/envelope';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiDeletedSuccess,
  ApiErrorResponses,
  ApiKeyProtected,
  ApiListSuccess,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { DeletedResponse } from '../common/openapi/error-envelope.response';
import { Page } from '../common/pagination/pagination';
import { IdParamDto } from '../common/validation/id.param';
import { ContactsService } from './contacts.service';
import { ContactResponse } from './dto/contact.response';
import { CreateContactDto } from './dto/create-contact.dto';
import { ContactFiltersQueryDto, ListContactsQueryDto } from './dto/list-contacts.query';
import { CONTACT_CSV_COLUMNS } from './contacts-csv';
import { UpdateContactDto } from './dto/update-contact.dto';

@ApiTags('contacts')
@ApiKeyProtected()
@Controller('contacts')
export class ContactsController {
  constructor(private readonly contacts: ContactsService) {}

  @Get()
  @ApiOp('contacts_list', 'List contacts (newest first; filters subscribed, search, email)')
  @ApiListSuccess(ContactResponse)
  @ApiErrorResponses([400])
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ListContactsQueryDto,
  ): Promise<Page<ContactResponse>> {
    return this.contacts.list(project.id, query);
  }

  @Get('export')
  @RawResponse()
  @ApiOp(
    'contacts_export',
    'Export the contacts the filters select as CSV (streamed, newest first)',
    `The list's filters (subscribed, search, email) without paging: every matching contact, one CSV row each, ` +
      `columns ${CONTACT_CSV_COLUMNS.join(', ')} (data as one JSON object). Read page by page as the client downloads.`,
  )
  @ApiResponse({
    status: 200,
    description: 'CSV with a header row (RFC 4180, CRLF line ends)',
    content: { 'text/csv': { schema: { type: 'string' } } },
  })
  @ApiErrorResponses([400])
  exportCsv(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ContactFiltersQueryDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Readable {
    void reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', 'attachment; filename="contacts.csv"')
      .header('cache-control', 'no-store');
    return this.contacts.exportCsv(project.id, query);
  }

  @Post()
  @ApiOp('contacts_create', 'Create a contact (409 if the email exists)')
  @ApiSuccess(201, ContactResponse)
  @ApiErrorResponses([400, 409, 413, 422])
  create(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: CreateContactDto,
  ): Promise<ContactResponse> {
    return this.contacts.create(project.id, dto);
  }

  @Get(':id')
  @ApiOp('contacts_get', 'Get a contact')
  @ApiSuccess(200, ContactResponse)
  @ApiErrorResponses([400, 404])
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<ContactResponse> {
    return this.contacts.get(project.id, params.id);
  }

  @Patch(':id')
  @ApiOp('contacts_update', 'Update a contact: data merges top-level keys, null removes a key')
  @ApiSuccess(200, ContactResponse)
  @ApiErrorResponses([400, 404, 413, 422])
  update(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Body() dto: UpdateContactDto,
  ): Promise<ContactResponse> {
    return this.contacts.update(project.id, params.id, dto);
  }

  @Delete(':id')
  @ApiOp('contacts_delete', 'Delete a contact with its events and email records')
  @ApiDeletedSuccess()
  @ApiErrorResponses([400, 404])
  remove(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<DeletedResponse> {
    return this.contacts.remove(project.id, params.id);
  }
}
