import { Module } from '@nestjs/common';
import { DomainsModule } from '../domains/domains.module';
import { ProjectSettingsService } from './project-settings.service';
import { ProjectsController } from './projects.controller';

/** The HTTP side of projects (GET/PATCH /project, GET /project/keys); ProjectsModule holds keys and authentication. */
@Module({
  imports: [DomainsModule],
  controllers: [ProjectsController],
  providers: [ProjectSettingsService],
})
export class ProjectSettingsModule {}
