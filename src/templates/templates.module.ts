import { Module } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
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
    {
      provide: TemplateRenderer,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        new TemplateRenderer({ timeoutMs: config.renderTimeoutMs }),
    },
  ],
  exports: [TemplatesService, TemplateRenderer],
})
export class TemplatesModule {}
