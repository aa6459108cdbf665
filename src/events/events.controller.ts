import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import { Page, PaginationQueryDto } from '../common/pagination/pagination';
import { EventNameView, ListEventsQueryDto } from './dto/events.dto';
import { EventView } from './event.view';
import { EventsService } from './events.service';

@ApiTags('events')
@Controller('events')
export class EventsController {
  constructor(private readonly events: EventsService) {}

  @Get()
  @ApiOperation({ summary: 'List events, newest first (filters name, contactId, since, until)' })
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ListEventsQueryDto,
  ): Promise<Page<EventView>> {
    return this.events.list(project.id, query);
  }

  @Get('names')
  @ApiOperation({
    summary: 'Distinct event names with their count and last occurrence, most recently seen first',
  })
  names(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: PaginationQueryDto,
  ): Promise<Page<EventNameView>> {
    return this.events.names(project.id, query);
  }
}
