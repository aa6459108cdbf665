import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ContactsService } from '../contacts/contacts.service';
import type { TrackEventDto, TrackResultView } from './dto/track.dto';
import { EventsService } from './events.service';
import type { NewEvent } from './events.repository';

/** POST /v1/track: contact upsert and event(s) in one transaction, listeners after commit. */
@Injectable()
export class TrackService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly contacts: ContactsService,
    private readonly events: EventsService,
  ) {}

  async track(projectId: string, dto: TrackEventDto): Promise<TrackResultView> {
    const { contact, recorded } = await this.dataSource.transaction(async (manager) => {
      const upsert = await this.contacts.upsertByEmail(manager, projectId, dto.email, {
        subscribed: dto.subscribed,
        defaultSubscribed: true,
        data: dto.data,
      });
      const events: NewEvent[] = [{ projectId, contactId: upsert.contact.id, name: dto.event, data: dto.data ?? {} }];
      if (upsert.subscriptionChanged) {
        events.push({
          projectId,
          contactId: upsert.contact.id,
          name: this.contacts.subscriptionEventName(upsert.contact.subscribed),
          data: { source: 'track', event: dto.event },
        });
      }
      return { contact: upsert.contact, recorded: await this.events.recordMany(manager, events) };
    });
    await this.events.publish(recorded.map((event) => ({ ...event, email: contact.email })));
    const tracked = recorded[0];
    return { contact: contact.id, event: tracked.id, timestamp: tracked.createdAt.toISOString() };
  }
}
