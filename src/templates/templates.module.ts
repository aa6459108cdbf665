import { Module } from '@nestjs/common';
import { ExpensiveWork } from '../common/rate-limit/expensive-work';
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
      inject: [APP_CONFIG, { token: ExpensiveWork, optional: true }],
      // Slow renders of API requests count against the project's budget of expensive work. A
      // worker process's renders are background work: its pool keeps fewer threads up.
      useFactory: (config: AppConfig, budget?: ExpensiveWork) =>
        new TemplateRenderer({
          timeoutMs: config.renderTimeoutMs,
          budget,
          background: config.role === 'worker',
        }),
    },
  ],
  exports: [TemplatesService, TemplateRenderer],
})
export class TemplatesModule {}
