import { Body, Controller, Delete, Get, Param, Post, Query } from '@nestjs/common';
import { ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';
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
import { BouncesService } from './bounces.service';
import { CreateSuppressionDto } from './dto/create-suppression.dto';
import { ListSuppressionsQueryDto } from './dto/list-suppressions.query';
import { SuppressionResponse } from './dto/suppression.response';

/** `DELETE /suppressions/{contactId}` (the contract's name): the suppressed contact's id. */
class ContactIdParamDto {
  @ApiProperty({
    format: 'uuid',
    description: 'A UUID; anything else is a 400 naming the parameter',
  })
  @IsUUID('all')
  contactId: string;
}

@ApiTags('suppressions')
@ApiKeyProtected()
@Controller('suppressions')
export class SuppressionsController {
  constructor(private readonly bounces: BouncesService) {}

  @Get()
  @ApiOp('suppressions_list', 'List suppressed contacts with reason and time (newest first)')
  @ApiListSuccess(SuppressionResponse)
  @ApiErrorResponses([400])
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ListSuppressionsQueryDto,
  ): Promise<Page<SuppressionResponse>> {
    return this.bounces.listSuppressions(project.id, query);
  }

  @Post()
  @ApiOp('suppressions_create', 'Suppress an address by hand (reason manual)')
  @ApiSuccess(201, SuppressionResponse)
  @ApiErrorResponses([400, 413, 422])
  create(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: CreateSuppressionDto,
  ): Promise<SuppressionResponse> {
    return this.bounces.suppress(project.id, dto.email);
  }

  @Delete(':contactId')
  @ApiOp(
    'suppressions_delete',
    'Lift a contact’s suppression (it stays unsubscribed until it subscribes again)',
  )
  @ApiDeletedSuccess()
  @ApiErrorResponses([400, 404])
  remove(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: ContactIdParamDto,
  ): Promise<DeletedResponse> {
    return this.bounces.unsuppress(project.id, params.contactId);
  }
}
