import { getQueueToken } from '@nestjs/bullmq';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { DelayedError, type Job, type Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { REDIS } from './redis.module';
import { redisKey } from './redis-keys';

/**
 * How long a parked job sleeps before it looks again by itself. Its project's
 * enable normally promotes it long before (ParkedJobs.resume); this only
 * bounds the wait of a job whose entry in the registry was lost.
 */
export const PARK_MS = 5 * 60_000;

/** A processor's answer for a job of a disabled project: park it (ParkedJobs.park). */
export interface Paused {
  pausedFor: string;
}

export function isPaused(outcome: unknown): outcome is Paused {
  return typeof outcome === 'object' && outcome !== null && 'pausedFor' in outcome;
}

/** Removes the project from the index when its set of parked jobs is empty, atomically with the check. */
const UNINDEX_IF_EMPTY = `if redis.call('scard', KEYS[1]) == 0 then redis.call('srem', KEYS[2], ARGV[1]) end return 0`;

/**
 * Jobs of disabled projects, parked. A processor that finds its job's project
 * disabled gives the job back to the queue delayed (no attempt counted, no
 * worker slot held) and files it under the project in Redis
 * (`<prefix>:parked:<project>`, and the project in `<prefix>:parked-projects`);
 * once the project is enabled again, `resume` promotes every job filed under
 * it, so the work goes on within seconds of the enable. The job is delayed
 * before it is filed: a resume that runs in between misses it, and the next
 * resume (the index still names the project) promotes it.
 */
@Injectable()
export class ParkedJobs {
  private readonly logger = new Logger(ParkedJobs.name);
  private readonly config: AppConfig;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly moduleRef: ModuleRef,
  ) {
    this.config = config;
  }

  /** Call from a processor's `process` with the job's lock token; let the DelayedError reach BullMQ. */
  async park(job: Job, token: string, projectId: string): Promise<never> {
    await job.moveToDelayed(Date.now() + PARK_MS, token);
    await this.redis
      .multi()
      .sadd(this.setOf(projectId), `${job.queueName}/${job.id}`)
      .sadd(this.index(), projectId)
      .exec();
    throw new DelayedError();
  }

  /** Projects with parked jobs. */
  projects(): Promise<string[]> {
    return this.redis.smembers(this.index());
  }

  /** Promotes the project's parked jobs (one no longer delayed is left alone) and forgets them; answers how many. */
  async resume(projectId: string): Promise<number> {
    const members = await this.redis.smembers(this.setOf(projectId));
    let promoted = 0;
    for (const member of members) {
      const slash = member.indexOf('/');
      const job = await this.queueOf(member.slice(0, slash))?.getJob(member.slice(slash + 1));
      try {
        if (job && (await job.isDelayed())) {
          await job.promote();
          promoted++;
        }
      } catch (error) {
        // Taken meanwhile by its own timer or another worker's resume: it runs anyway.
        this.logger.debug({ err: error, job: member }, 'parked job not promoted');
      }
    }
    if (members.length > 0) await this.redis.srem(this.setOf(projectId), ...members);
    await this.redis.eval(UNINDEX_IF_EMPTY, 2, this.setOf(projectId), this.index(), projectId);
    return promoted;
  }

  private queueOf(name: string): Queue | null {
    try {
      return this.moduleRef.get<Queue>(getQueueToken(name), { strict: false });
    } catch {
      return null;
    }
  }

  private setOf(projectId: string): string {
    // The set and the index are written in one MULTI and read in one script: one slot on a cluster.
    return redisKey(this.config, 'parked', `parked:${projectId}`);
  }

  private index(): string {
    return redisKey(this.config, 'parked', 'parked-projects');
  }
}
