import { OnApplicationShutdown } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';

/**
 * Where reads that tolerate lag go (DATABASE_READ_URL; the primary when unset): segment counts,
 * previews and member pages, list pages, stats of finished campaigns, metrics gauges
 * (docs/scaling.md). A read that follows a write of the same request or job must not use it:
 * a replica may not have that write yet.
 */
export class ReadDatabase implements OnApplicationShutdown {
  constructor(
    readonly dataSource: DataSource,
    /** Whether this process opened the data source (a replica) and so closes it. */
    private readonly owned: boolean,
  ) {}

  get manager(): EntityManager {
    return this.dataSource.manager;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.owned && this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}
