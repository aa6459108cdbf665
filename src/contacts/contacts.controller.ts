import { Body, Controller, Delete, Get, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
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
import { ListContactsQueryDto } from './dto/list-contacts.query';
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
