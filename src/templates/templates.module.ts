import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ContactsModule } from '../contacts/contacts.module';
import { Template } from './template.entity';
import { TemplateRenderer } from './template-renderer';
import { TemplatesController } from './templates.controller';
import { TemplatesService } from './templates.service';

@Module({
  imports: [TypeOrmModule.forFeature([Template]), ContactsModule],
  controllers: [TemplatesController],
  providers: [TemplatesService, { provide: TemplateRenderer, useValue: new TemplateRenderer() }],
  exports: [TemplatesService, TemplateRenderer],
})
export class TemplatesModule {}
