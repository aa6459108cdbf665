import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiKeyCache } from './api-key-cache';
import { ApiKey } from './api-key.entity';
import { Project } from './project.entity';
import { ProjectsService } from './projects.service';

/** Global: the API-key guard, registered app-wide, needs ProjectsService everywhere. */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([Project, ApiKey])],
  providers: [ProjectsService, ApiKeyCache],
  exports: [ProjectsService],
})
export class ProjectsModule {}
