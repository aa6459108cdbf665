import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { newId } from '../../database/id';
import type { AuthenticatedKey } from './authenticated-key';
import {
  csrfTokenOf,
  hashSessionId,
  isWellFormedSessionId,
  newSessionId,
  SESSION_IDLE_SECONDS,
} from './dashboard-session';
import { DashboardSessionsRepository } from './dashboard-sessions.repository';

export interface StartedSession {
  /** The cookie's value: given to the browser once, stored only as a hash. */
  sessionId: string;
  csrfToken: string;
  expiresAt: Date;
}

/** Ended sessions dropped per sign-in, so the table does not grow with abandoned ones. */
const EXPIRED_DROPPED_PER_SIGN_IN = 100;

/**
 * Dashboard sessions, kept in Postgres so they survive a restart and work across API processes:
 * started for a secret key (POST /session), resolved by the guard on every cookie request, ended
 * by sign-out. A session acts as its key, so revoking the key ends it.
 */
@Injectable()
export class SessionAuthenticator {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: DashboardSessionsRepository,
  ) {}

  async start(apiKeyId: string): Promise<StartedSession> {
    const sessionId = newSessionId();
    const manager = this.dataSource.manager;
    await this.sessions.deleteExpired(manager, EXPIRED_DROPPED_PER_SIGN_IN);
    const expiresAt = await this.sessions.insert(manager, {
      id: newId(),
      tokenHash: hashSessionId(sessionId),
      apiKeyId,
      idleSeconds: SESSION_IDLE_SECONDS,
    });
    return { sessionId, csrfToken: csrfTokenOf(sessionId), expiresAt };
  }

  /** The key a live session acts as (its expiry slid), or null when it has ended or never was. */
  async resolve(sessionId: string): Promise<AuthenticatedKey | null> {
    if (!isWellFormedSessionId(sessionId)) return null;
    const row = await this.sessions.findLiveAndTouch(
      this.dataSource.manager,
      hashSessionId(sessionId),
      SESSION_IDLE_SECONDS,
    );
    if (!row) return null;
    return {
      keyId: row.keyId,
      keyType: row.type,
      project: { id: row.projectId, name: row.projectName, enabled: row.enabled },
      session: { id: row.id, secret: sessionId, expiresAt: row.expiresAt },
    };
  }

  async end(sessionRowId: string): Promise<void> {
    await this.sessions.delete(this.dataSource.manager, sessionRowId);
  }
}
