import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../common/auth/auth.module';
import { ApiKey } from './api-key.entity';
import { Project } from './project.entity';
import { ProjectsService } from './projects.service';

/** Projects and their keys (administration: the CLI, GET/PATCH /project); authentication is common/auth. */
@Module({
  imports: [TypeOrmModule.forFeature([Project, ApiKey]), AuthModule],
  providers: [ProjectsService],
  exports: [ProjectsService],
})
export class ProjectsModule {}
