import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { NoApiKey } from '../common/auth/auth.decorators';
import { ApiErrorResponses, ApiNoKey, ApiOp, ApiSuccess } from '../common/openapi/decorators';
import { TrackingDomainCheckQueryDto } from './dto/tracking-domain-check.query';
import { TrackingDomainCheckResponse } from './dto/tracking-domain-check.response';
import { ProjectSettingsService } from './project-settings.service';

/**
 * The question a TLS proxy with on-demand certificates asks before it gets
 * one (Caddy's `on_demand_tls { ask … }`): without a key, since the proxy
 * has none, and answering only yes or no about a name.
 */
@ApiTags('project')
@NoApiKey()
@ApiNoKey()
@Controller('tracking-domains')
export class TrackingDomainsController {
  constructor(private readonly settings: ProjectSettingsService) {}

  @Get('check')
  @ApiOp(
    'trackingDomains_check',
    "200 when the name is some project's VERIFIED tracking domain, 404 otherwise (no key: a TLS proxy's ask endpoint)",
  )
  @ApiSuccess(200, TrackingDomainCheckResponse)
  @ApiErrorResponses([400, 404, 429, 500], {
    404: 'TRACKING_DOMAIN_NOT_FOUND: not a verified tracking domain',
  })
  check(@Query() query: TrackingDomainCheckQueryDto): Promise<TrackingDomainCheckResponse> {
    return this.settings.assertVerifiedTrackingDomain(query.domain);
  }
}
