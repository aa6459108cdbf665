import { Module } from '@nestjs/common';
import { AuthModule } from '../common/auth/auth.module';
import { ProjectsRepository } from './projects.repository';
import { ProjectsService } from './projects.service';
import { TrackingHosts } from './tracking-hosts';

/** Projects and their keys (administration: the CLI, GET/PATCH /project); authentication is common/auth. */
@Module({
  imports: [AuthModule],
  providers: [ProjectsService, ProjectsRepository, TrackingHosts],
  exports: [ProjectsService, TrackingHosts],
})
export class ProjectsModule {}
