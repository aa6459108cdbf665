import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
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
import { Page, PaginationQueryDto } from '../common/pagination/pagination';
import { IdParamDto } from '../common/validation/id.param';
import { CreateWebhookDto } from './dto/create-webhook.dto';
import { DeliveryParamDto } from './dto/delivery.param';
import { ListDeliveriesQueryDto } from './dto/list-deliveries.query';
import { UpdateWebhookDto } from './dto/update-webhook.dto';
import {
  WebhookDeliveryResponse,
  WebhookResponse,
  WebhookWithSecretResponse,
} from './dto/webhook.response';
import { WebhooksService } from './webhooks.service';

@ApiTags('webhooks')
@ApiKeyProtected()
@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Get()
  @ApiOp('webhooks_list', 'List webhook endpoints, newest first')
  @ApiListSuccess(WebhookResponse)
  @ApiErrorResponses([400])
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: PaginationQueryDto,
  ): Promise<Page<WebhookResponse>> {
    return this.webhooks.list(project.id, query);
  }

  @Post()
  @ApiOp(
    'webhooks_create',
    'Create an endpoint; the answer holds its signing secret, shown this once',
  )
  @ApiSuccess(201, WebhookWithSecretResponse)
  @ApiErrorResponses([400, 413, 422])
  create(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: CreateWebhookDto,
  ): Promise<WebhookWithSecretResponse> {
    return this.webhooks.create(project.id, dto);
  }

  @Get(':id')
  @ApiOp('webhooks_get', 'Get an endpoint (never its secret)')
  @ApiSuccess(200, WebhookResponse)
  @ApiErrorResponses([400, 404])
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<WebhookResponse> {
    return this.webhooks.get(project.id, params.id);
  }

  @Patch(':id')
  @ApiOp('webhooks_update', 'Change the URL, events, description, or enable/disable')
  @ApiSuccess(200, WebhookResponse)
  @ApiErrorResponses([400, 404, 413, 422])
  update(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Body() dto: UpdateWebhookDto,
  ): Promise<WebhookResponse> {
    return this.webhooks.update(project.id, params.id, dto);
  }

  @Delete(':id')
  @ApiOp('webhooks_delete', 'Delete an endpoint and its deliveries')
  @ApiDeletedSuccess()
  @ApiErrorResponses([400, 404])
  remove(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<DeletedResponse> {
    return this.webhooks.remove(project.id, params.id);
  }

  @Post(':id/rotate-secret')
  @HttpCode(200)
  @ApiOp(
    'webhooks_rotateSecret',
    'Replace the signing secret (shown once); it signs every attempt from now on',
  )
  @ApiSuccess(200, WebhookWithSecretResponse)
  @ApiErrorResponses([400, 404])
  rotateSecret(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<WebhookWithSecretResponse> {
    return this.webhooks.rotateSecret(project.id, params.id);
  }

  @Post(':id/test')
  @HttpCode(202)
  @ApiOp('webhooks_test', 'Send a webhook.test event to this endpoint')
  @ApiSuccess(202, WebhookDeliveryResponse)
  @ApiErrorResponses([400, 404])
  test(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<WebhookDeliveryResponse> {
    return this.webhooks.test(project.id, params.id);
  }

  @Get(':id/deliveries')
  @ApiOp(
    'webhooks_listDeliveries',
    'Deliveries to this endpoint, newest first: status, attempts, last response, next attempt',
  )
  @ApiListSuccess(WebhookDeliveryResponse)
  @ApiErrorResponses([400, 404])
  deliveries(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Query() query: ListDeliveriesQueryDto,
  ): Promise<Page<WebhookDeliveryResponse>> {
    return this.webhooks.deliveries(project.id, params.id, query);
  }

  @Post(':id/deliveries/:deliveryId/retry')
  @HttpCode(202)
  @ApiOp('webhooks_retryDelivery', 'Send a delivery again now (a fresh retry schedule)')
  @ApiSuccess(202, WebhookDeliveryResponse)
  @ApiErrorResponses([400, 404])
  retry(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: DeliveryParamDto,
  ): Promise<WebhookDeliveryResponse> {
    return this.webhooks.retry(project.id, params.id, params.deliveryId);
  }
}
