import { Body, Controller, Delete, Get, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import { Page } from '../common/pagination/pagination';
import { ContactView } from './contact.view';
import { ContactsService } from './contacts.service';
import {
  CreateContactDto,
  IdParamDto,
  ListContactsQueryDto,
  UpdateContactDto,
} from './dto/contact.dto';

@ApiTags('contacts')
@Controller('contacts')
export class ContactsController {
  constructor(private readonly contacts: ContactsService) {}

  @Get()
  @ApiOperation({ summary: 'List contacts (newest first; filters subscribed, search, email)' })
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ListContactsQueryDto,
  ): Promise<Page<ContactView>> {
    return this.contacts.list(project.id, query);
  }

  @Post()
  @ApiOperation({ summary: 'Create a contact (409 if the email exists)' })
  create(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: CreateContactDto,
  ): Promise<ContactView> {
    return this.contacts.create(project.id, dto);
  }

  @Get(':id')
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<ContactView> {
    return this.contacts.get(project.id, params.id);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Update a contact: data merges top-level keys, null removes a key' })
  update(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Body() dto: UpdateContactDto,
  ): Promise<ContactView> {
    return this.contacts.update(project.id, params.id, dto);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Delete a contact with its events and email records' })
  delete(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<{ id: string; deleted: true }> {
    return this.contacts.delete(project.id, params.id);
  }
}
