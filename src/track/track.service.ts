import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { normalizeEmail } from '../common/validation/email';
import { toTrackedDataPatch } from '../contacts/contact-data';
import { ContactsService } from '../contacts/contacts.service';
import type { EventRow } from '../events/event.row';
import type { TrackEventDto } from './dto/track-event.dto';
import type { TrackResponse } from './dto/track.response';
import { EventsService } from '../events/events.service';
import type { NewEvent } from '../events/events.repository';
import { TrackWriter } from './track-writer';

/** POST /v1/track: contact upsert and event(s) in one transaction, listeners after commit. */
@Injectable()
export class TrackService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly contacts: ContactsService,
    private readonly events: EventsService,
    private readonly writer: TrackWriter,
  ) {}

  /**
   * With a public key, `subscribed: true` may create a subscribed contact but never resubscribes
   * one: a key anyone can read from a web page must not undo an unsubscribe.
   */
  async track(projectId: string, dto: TrackEventDto, viaPublicKey = false): Promise<TrackResponse> {
    const keepsSubscription =
      dto.subscribed === undefined || (viaPublicKey && dto.subscribed === true);
    const result = keepsSubscription
      ? await this.trackOneStatement(projectId, dto)
      : await this.trackWithSubscription(projectId, dto);
    await this.events.publish(result.recorded.map((event) => ({ ...event, email: result.email })));
    const tracked = result.recorded[0];
    return {
      contact: tracked.contactId as string,
      event: tracked.id,
      timestamp: tracked.createdAt.toISOString(),
    };
  }

  /**
   * The common case: the subscription is not touched, so upsert and insert fit
   * in one statement, which TrackWriter shares with concurrent tracks.
   */
  private async trackOneStatement(
    projectId: string,
    dto: TrackEventDto,
  ): Promise<{ email: string; recorded: EventRow[] }> {
    const data = dto.data ?? {};
    const row = await this.writer.write({
      projectId,
      email: normalizeEmail(dto.email),
      patch: toTrackedDataPatch(data),
      event: { name: dto.event, data },
    });
    return {
      email: row.email,
      recorded: [
        {
          id: row.eventId,
          projectId,
          contactId: row.contactId,
          emailId: null,
          name: dto.event,
          data,
          createdAt: row.createdAt,
        },
      ],
    };
  }

  /** `subscribed` given: a change of an existing contact's state also records contact.subscribed/unsubscribed. */
  private async trackWithSubscription(
    projectId: string,
    dto: TrackEventDto,
  ): Promise<{ email: string; recorded: EventRow[] }> {
    return this.dataSource.transaction(async (manager) => {
      const upsert = await this.contacts.upsertByEmail(manager, projectId, dto.email, {
        subscribed: dto.subscribed,
        defaultSubscribed: true,
        data: dto.data,
      });
      const events: NewEvent[] = [
        { projectId, contactId: upsert.contact.id, name: dto.event, data: dto.data ?? {} },
      ];
      if (upsert.subscriptionChanged) {
        events.push({
          projectId,
          contactId: upsert.contact.id,
          name: this.contacts.subscriptionEventName(upsert.contact.subscribed),
          data: { source: 'track', event: dto.event },
        });
      }
      return {
        email: upsert.contact.email,
        recorded: await this.events.recordMany(manager, events),
      };
    });
  }
}
