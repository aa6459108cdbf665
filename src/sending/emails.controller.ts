import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import { EmailResponse, ListEmailsQueryDto } from './dto/email.dto';
import { EmailsService } from './emails.service';

@ApiTags('emails')
@Controller('emails')
export class EmailsController {
  constructor(private readonly emails: EmailsService) {}

  @Get()
  list(@CurrentProject() project: CurrentProjectInfo, @Query() query: ListEmailsQueryDto) {
    return this.emails.list(project.id, query);
  }

  @Get(':id')
  @ApiOkResponse({ type: EmailResponse })
  get(@CurrentProject() project: CurrentProjectInfo, @Param('id') id: string) {
    return this.emails.get(project.id, id);
  }
}
