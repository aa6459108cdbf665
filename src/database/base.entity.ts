import { BeforeInsert, CreateDateColumn, PrimaryColumn } from 'typeorm';
import { newId } from './id';

/** Every table: a UUIDv7 primary key and a creation time. */
export abstract class BaseEntity {
  @PrimaryColumn('uuid')
  id: string;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @BeforeInsert()
  assignId(): void {
    if (!this.id) this.id = newId();
  }
}
