import { Module } from '@nestjs/common';
import { DisabledProjects } from './disabled-projects';
import { ProjectsRepository } from './projects.repository';

/**
 * The background workers' view of disabled projects (DisabledProjects). A
 * module of its own: it needs the queues (QueueModule), which the CLI's
 * ProjectsModule does without.
 */
@Module({
  providers: [DisabledProjects, ProjectsRepository],
  exports: [DisabledProjects],
})
export class DisabledProjectsModule {}
