import { Module } from '@nestjs/common';
import { ContactsModule } from '../contacts/contacts.module';
import { EventsModule } from '../events/events.module';
import { ProjectsModule } from '../projects/projects.module';
import { SendingModule } from '../sending/sending.module';
import { ConfirmController } from './confirm.controller';
import { ConfirmationMail } from './confirmation-mail';
import { OptInRepository } from './opt-in.repository';
import { OptInService } from './opt-in.service';
import { SubscribeController } from './subscribe.controller';

/**
 * Double opt-in: POST /v1/subscribe (pk_ or sk_, any origin) and the
 * confirmation link GET /confirm/{token}. Sends its confirmation email
 * through sending's EmailsService like any transactional mail.
 */
@Module({
  imports: [ProjectsModule, ContactsModule, EventsModule, SendingModule],
  controllers: [SubscribeController, ConfirmController],
  providers: [OptInService, OptInRepository, ConfirmationMail],
})
export class OptInModule {}
