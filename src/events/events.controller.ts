import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiListSuccess,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { Page, PaginationQueryDto } from '../common/pagination/pagination';
import { EventNameResponse } from './dto/event-name.response';
import { EventResponse } from './dto/event.response';
import { ListEventsQueryDto } from './dto/list-events.query';
import { EventsPerMinuteQueryDto, EventsPerMinuteResponse } from './dto/events-per-minute';
import { EventsService } from './events.service';

@ApiTags('events')
@ApiKeyProtected()
@Controller('events')
export class EventsController {
  constructor(private readonly events: EventsService) {}

  @Get()
  @ApiOp('events_list', 'List events, newest first (filters name, contactId, since, until)')
  @ApiListSuccess(EventResponse)
  @ApiErrorResponses([400])
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ListEventsQueryDto,
  ): Promise<Page<EventResponse>> {
    return this.events.list(project.id, query);
  }

  @Get('names')
  @ApiOp(
    'events_listNames',
    'Distinct event names with their count and last occurrence, most recently seen first',
  )
  @ApiListSuccess(EventNameResponse, 'One page, most recently seen first')
  @ApiErrorResponses([400])
  names(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: PaginationQueryDto,
  ): Promise<Page<EventNameResponse>> {
    return this.events.names(project.id, query);
  }

  @Get('per-minute')
  @ApiOp(
    'events_perMinute',
    'Events per minute over the last minutes (default 60, at most 120), oldest first, zeros included',
    "The dashboard's live figure: one range scan of the (project_id, created_at) index.",
  )
  @ApiSuccess(200, EventsPerMinuteResponse)
  @ApiErrorResponses([400])
  perMinute(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: EventsPerMinuteQueryDto,
  ): Promise<EventsPerMinuteResponse> {
    return this.events.perMinute(project.id, query.minutes);
  }
}
