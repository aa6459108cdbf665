import { Module } from '@nestjs/common';
import { DisabledProjectsModule } from '../projects/disabled-projects.module';
import { ConditionsModule } from '../conditions/conditions.module';
import { ContactsModule } from '../contacts/contacts.module';
import { DomainsModule } from '../domains/domains.module';
import { EventsModule } from '../events/events.module';
import { SegmentsModule } from '../segments/segments.module';
import { SendingModule } from '../sending/sending.module';
import { WebhookSecretsModule } from '../webhooks/webhook-secrets.module';
import { WorkflowDispatcher } from './workflow-dispatcher';
import { WorkflowEngine } from './workflow-engine';
import { WorkflowStepInterpreter } from './workflow-step-interpreter';
import { WorkflowSecrets } from './workflow-secrets';
import { WorkflowWebhookCaller } from './workflow-webhook-caller';
import { WorkflowsController } from './workflows.controller';
import { WorkflowsProcessor } from './workflows.processor';
import { WorkflowsRecovery } from './workflows.recovery';
import { WorkflowsRepository } from './workflows.repository';
import { WorkflowExecutionsRepository } from './workflow-executions.repository';
import { WorkflowsService } from './workflows.service';

/** Automation: workflows, their executions, the engine that runs one step per job, and the triggers' dispatch. */
@Module({
  imports: [
    SendingModule,
    ConditionsModule,
    ContactsModule,
    DomainsModule,
    EventsModule,
    SegmentsModule,
    WebhookSecretsModule,
    DisabledProjectsModule,
  ],
  controllers: [WorkflowsController],
  providers: [
    WorkflowsRepository,
    WorkflowExecutionsRepository,
    WorkflowsService,
    WorkflowDispatcher,
    WorkflowEngine,
    WorkflowStepInterpreter,
    WorkflowWebhookCaller,
    WorkflowsProcessor,
    WorkflowsRecovery,
    WorkflowSecrets,
  ],
})
export class WorkflowsModule {}
