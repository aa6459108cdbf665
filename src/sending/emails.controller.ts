import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiListSuccess,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { IdParamDto } from '../common/validation/id.param';
import { EmailContentResponse } from './dto/email-content.response';
import { EmailResponse } from './dto/email.response';
import { ListEmailsQueryDto } from './dto/list-emails.query';
import { EmailsService } from './emails.service';

@ApiTags('emails')
@ApiKeyProtected()
@Controller('emails')
export class EmailsController {
  constructor(private readonly emails: EmailsService) {}

  @Get()
  @ApiOp(
    'emails_list',
    'List email records, newest first (filters status, contactId, campaignId, opened, clicked)',
  )
  @ApiListSuccess(EmailResponse)
  @ApiErrorResponses([400])
  list(@CurrentProject() project: CurrentProjectInfo, @Query() query: ListEmailsQueryDto) {
    return this.emails.list(project.id, query);
  }

  @Get(':id')
  @ApiOp('emails_get', 'Get one email record with its delivery status')
  @ApiSuccess(200, EmailResponse)
  @ApiErrorResponses([404])
  get(@CurrentProject() project: CurrentProjectInfo, @Param() { id }: IdParamDto) {
    return this.emails.get(project.id, id);
  }

  @Get(':id/content')
  @ApiOp(
    'emails_content',
    'Get the message of one email: subject, HTML and text',
    'Transactional and workflow mail: the rendered message stored when it was accepted (what delivery sends, before the open pixel and tracked links are added). Campaign mail stores its content once per campaign and renders it per recipient at delivery, so it is rendered again now with the contact’s current data (`origin: RENDERED`).',
  )
  @ApiSuccess(200, EmailContentResponse)
  @ApiErrorResponses([400, 404, 422])
  content(@CurrentProject() project: CurrentProjectInfo, @Param() { id }: IdParamDto) {
    return this.emails.content(project.id, id);
  }
}
