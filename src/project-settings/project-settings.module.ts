import { Module } from '@nestjs/common';
import { DomainsModule } from '../domains/domains.module';
import { ProjectSettingsService } from './project-settings.service';
import { ProjectsModule } from '../projects/projects.module';
import { ProjectSettingsController } from './project-settings.controller';
import { TrackingDomainsController } from './tracking-domains.controller';

/**
 * The calling key's own project over HTTP (GET/PATCH /project, GET /project/keys,
 * POST /project/tracking-domain/verify), and GET /tracking-domains/check.
 * Apart from projects/ (administration, also the CLI's), because the default
 * sender is checked against the project's domains.
 */
@Module({
  imports: [DomainsModule, ProjectsModule],
  controllers: [ProjectSettingsController, TrackingDomainsController],
  providers: [ProjectSettingsService],
})
export class ProjectSettingsModule {}
