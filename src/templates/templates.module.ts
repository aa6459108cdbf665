import { Module } from '@nestjs/common';
import { ContactsModule } from '../contacts/contacts.module';
import { TemplateRenderer } from './template-renderer';
import { TemplatesController } from './templates.controller';
import { TemplatesRepository } from './templates.repository';
import { TemplatesService } from './templates.service';

@Module({
  imports: [ContactsModule],
  controllers: [TemplatesController],
  providers: [
    TemplatesService,
    TemplatesRepository,
    { provide: TemplateRenderer, useValue: new TemplateRenderer() },
  ],
  exports: [TemplatesService, TemplateRenderer],
})
export class TemplatesModule {}
