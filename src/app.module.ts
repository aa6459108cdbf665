import { OperationsModule } from './operations/operations.module';
import { PartitionsModule } from './partitions/partitions.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { WorkflowsModule } from './workflows/workflows.module';
import { BouncesModule } from './bounces/bounces.module';
import { CampaignsModule } from './campaigns/campaigns.module';
import { DynamicModule, Module, Type } from '@nestjs/common';
import { CommonModule } from './common/common.module';
import { AppMetrics } from './common/metrics/metrics';
import { MetricsModule } from './common/metrics/metrics.module';
import { ContactsModule } from './contacts/contacts.module';
import { AppConfig } from './config/config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { DeliveryModule } from './delivery/delivery.module';
import { EventsModule } from './events/events.module';
import { TrackModule } from './track/track.module';
import { DomainsModule } from './domains/domains.module';
import { EMAIL_TRACKING_OPENAPI_PATHS } from './engagement/email-tracking.routes';
import { EngagementModule } from './engagement/engagement.module';
import { HealthModule } from './health/health.module';
import { InboundModule } from './inbound/inbound.module';
import { ProjectSettingsModule } from './project-settings/project-settings.module';
import { PROVIDER_HOOKS_OPENAPI_PATHS } from './provider-hooks/provider-hooks.routes';
import { ProviderHooksModule } from './provider-hooks/provider-hooks.module';
import { QueueModule } from './queue/queue.module';
import { RedisModule } from './queue/redis.module';
import { SegmentsModule } from './segments/segments.module';
import { OptInModule } from './opt-in/opt-in.module';
import { SendingModule } from './sending/sending.module';
import { SessionModule } from './session/session.module';
import { TemplatesModule } from './templates/templates.module';

/** Feature modules: a new feature is a folder under src/ and one line here. */
export const FEATURE_MODULES: Type[] = [
  HealthModule,
  DomainsModule,
  ProjectSettingsModule,
  ContactsModule,
  EventsModule,
  TrackModule,
  SegmentsModule,
  TemplatesModule,
  SendingModule,
  OptInModule,
  DeliveryModule,
  BouncesModule,
  ProviderHooksModule,
  EngagementModule,
  CampaignsModule,
  WorkflowsModule,
  WebhooksModule,
  InboundModule,
  OperationsModule,
  PartitionsModule,
  SessionModule,
];

/** OpenAPI path items of the routes registered on Fastify directly (no controller decorators to read). */
export const RAW_ROUTE_OPENAPI_PATHS = {
  ...EMAIL_TRACKING_OPENAPI_PATHS,
  ...PROVIDER_HOOKS_OPENAPI_PATHS,
};

@Module({})
export class AppModule {
  static register(config: AppConfig, metrics: AppMetrics = new AppMetrics()): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        MetricsModule.forRoot(metrics),
        DatabaseModule,
        RedisModule,
        QueueModule.forRoot(config),
        CommonModule,
        ...FEATURE_MODULES,
      ],
    };
  }
}
