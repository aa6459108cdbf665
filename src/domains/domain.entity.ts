import { Column, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { Project } from '../projects/project.entity';

export enum DomainStatus {
  PENDING = 'PENDING',
  VERIFIED = 'VERIFIED',
  FAILED = 'FAILED',
}

export enum DnsRecordPurpose {
  OWNERSHIP = 'OWNERSHIP',
  DKIM = 'DKIM',
  SPF = 'SPF',
  DMARC = 'DMARC',
  RETURN_PATH = 'RETURN_PATH',
}

export enum DnsRecordStatus {
  PENDING = 'PENDING',
  VERIFIED = 'VERIFIED',
  FAILED = 'FAILED',
}

/** Outcome of the last DNS check per record; records never checked are PENDING. */
export type RecordStatuses = Partial<Record<DnsRecordPurpose, DnsRecordStatus>>;

/** Why a record is not verified: nothing at the name, no such record there, another value, or no answer. */
export enum DnsRecordError {
  NXDOMAIN = 'NXDOMAIN',
  NO_RECORD = 'NO_RECORD',
  MISMATCH = 'MISMATCH',
  DNS_ERROR = 'DNS_ERROR',
}

/** What the last check saw of a record that did not match: its error and the values found (TXT values, CNAME targets). */
export interface RecordProblem {
  error: DnsRecordError;
  found?: string[];
}

export type RecordProblems = Partial<Record<DnsRecordPurpose, RecordProblem>>;

/**
 * A sending domain of a project. The DKIM private key is stored only sealed
 * (AES-256-GCM under APP_SECRET, bound to the row id); the public key and the
 * ownership token are published by the user, so they are stored in clear.
 */
@Entity('domains')
@Index('UQ_domains_project_domain', ['projectId', 'domain'], { unique: true })
@Index('IDX_domains_status_checked', ['status', 'lastCheckedAt'])
export class Domain extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id' })
  project?: Project;

  /** Punycode, lower case, no trailing dot. */
  @Column({ type: 'varchar', length: 253 })
  domain: string;

  @Column({
    type: 'enum',
    enum: DomainStatus,
    enumName: 'domain_status',
    default: DomainStatus.PENDING,
  })
  status: DomainStatus;

  @Column({ type: 'varchar', length: 64 })
  ownershipToken: string;

  @Column({ type: 'varchar', length: 63 })
  dkimSelector: string;

  /** Base64 of the SubjectPublicKeyInfo DER: the `p=` value of the DKIM record. */
  @Column({ type: 'text' })
  dkimPublicKey: string;

  /** SecretBox of the PKCS#8 PEM, associated data = row id. Never leaves the service in a response. */
  @Column({ type: 'bytea', select: false })
  dkimPrivateKeySealed: Buffer;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  recordStatuses: RecordStatuses;

  /** Per record not matched at the last check: why, with the values seen. Absent for matched records. */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  recordProblems: RecordProblems;

  @Column({ type: 'timestamptz', nullable: true })
  lastCheckedAt: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  verifiedAt: Date | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
