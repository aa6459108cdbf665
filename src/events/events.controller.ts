import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import { ApiErrorResponses, ApiKeyProtected, ApiListSuccess, ApiOp } from '../common/openapi/decorators';
import { Page, PaginationQueryDto } from '../common/pagination/pagination';
import { EventNameView, ListEventsQueryDto } from './dto/events.dto';
import { EventView } from './event.view';
import { EventsService } from './events.service';

@ApiTags('events')
@ApiKeyProtected()
@Controller('events')
export class EventsController {
  constructor(private readonly events: EventsService) {}

  @Get()
  @ApiOp('events_list', 'List events, newest first (filters name, contactId, since, until)')
  @ApiListSuccess(EventView)
  @ApiErrorResponses([400])
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ListEventsQueryDto,
  ): Promise<Page<EventView>> {
    return this.events.list(project.id, query);
  }

  @Get('names')
  @ApiOp('events_listNames', 'Distinct event names with their count and last occurrence, most recently seen first')
  @ApiListSuccess(EventNameView, 'One page, most recently seen first')
  @ApiErrorResponses([400])
  names(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: PaginationQueryDto,
  ): Promise<Page<EventNameView>> {
    return this.events.names(project.id, query);
  }
}
