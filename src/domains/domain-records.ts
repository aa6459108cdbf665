import { DnsRecordPurpose, DnsRecordStatus, RecordProblems, RecordStatuses } from './domain.entity';
import type { DomainRecordResponse } from './dto/domain.response';

/** What the user publishes, as shown in the domain's `records`. */
export interface ExpectedRecord {
  type: 'TXT' | 'CNAME';
  name: string;
  value: string;
  purpose: DnsRecordPurpose;
  required: boolean;
}

export interface DomainKeyFacts {
  domain: string;
  ownershipToken: string;
  dkimSelector: string;
  dkimPublicKey: string;
}

export const OWNERSHIP_PREFIX = 'mailwright-verification=';
/** SPF cannot name the relay's hosts (SMTP_URL is the operator's choice): `a mx` plus a softfail is the safe start. */
export const RECOMMENDED_SPF = 'v=spf1 a mx ~all';
export const RECOMMENDED_DMARC = 'v=DMARC1; p=none;';

/** The prefix of a domain's own return-path domain: `bounces.<domain>`, a CNAME to RETURN_PATH_DOMAIN. */
export const RETURN_PATH_PREFIX = 'bounces.';

/**
 * The five records, in the order they are shown: required ones first. The
 * RETURN_PATH CNAME puts the envelope sender on the domain itself (SPF and
 * DMARC alignment) while bounces reach RETURN_PATH_DOMAIN's listener.
 */
export function expectedRecords(facts: DomainKeyFacts, returnPathDomain: string): ExpectedRecord[] {
  return [
    {
      type: 'TXT',
      name: `_mailwright.${facts.domain}`,
      value: `${OWNERSHIP_PREFIX}${facts.ownershipToken}`,
      purpose: DnsRecordPurpose.OWNERSHIP,
      required: true,
    },
    {
      type: 'TXT',
      name: `${facts.dkimSelector}._domainkey.${facts.domain}`,
      value: `v=DKIM1; k=rsa; p=${facts.dkimPublicKey}`,
      purpose: DnsRecordPurpose.DKIM,
      required: true,
    },
    {
      type: 'TXT',
      name: facts.domain,
      value: RECOMMENDED_SPF,
      purpose: DnsRecordPurpose.SPF,
      required: false,
    },
    {
      type: 'TXT',
      name: `_dmarc.${facts.domain}`,
      value: RECOMMENDED_DMARC,
      purpose: DnsRecordPurpose.DMARC,
      required: false,
    },
    {
      type: 'CNAME',
      name: `${RETURN_PATH_PREFIX}${facts.domain}`,
      value: returnPathDomain,
      purpose: DnsRecordPurpose.RETURN_PATH,
      required: false,
    },
  ];
}

export function recordResponses(
  facts: DomainKeyFacts,
  returnPathDomain: string,
  statuses: RecordStatuses,
  problems: RecordProblems = {},
): DomainRecordResponse[] {
  return expectedRecords(facts, returnPathDomain).map((record) => {
    const status = statuses[record.purpose] ?? DnsRecordStatus.PENDING;
    const problem = status === DnsRecordStatus.VERIFIED ? undefined : problems[record.purpose];
    return {
      ...record,
      status,
      ...(problem?.found ? { found: problem.found } : {}),
      ...(problem ? { error: problem.error } : {}),
    };
  });
}

/**
 * One TXT record as the resolver returns it (its character-strings) joined
 * into one value. Zone editors differ: some keep literal quotes, so they go too.
 */
export function joinTxt(chunks: string[]): string {
  return chunks.join('').replace(/"/g, '').trim();
}

/** `k=v; k=v` tag list of DKIM/DMARC records; whitespace around tags and values is insignificant. */
export function parseTags(value: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of value.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim().toLowerCase();
    if (!tags.has(name)) tags.set(name, part.slice(eq + 1).trim());
  }
  return tags;
}

/** Verdict on the TXT records found at one name: MATCH, MISMATCH (something else is published) or ABSENT. */
export type RecordVerdict = 'MATCH' | 'MISMATCH' | 'ABSENT';

export function judgeOwnership(values: string[], token: string): RecordVerdict {
  if (values.length === 0) return 'ABSENT';
  const wanted = `${OWNERSHIP_PREFIX}${token}`;
  return values.some((v) => v.replace(/\s+/g, '') === wanted) ? 'MATCH' : 'MISMATCH';
}

/** A DKIM key record matches when its `p=` is our public key (whitespace, tag order and quotes do not matter). */
export function judgeDkim(values: string[], publicKey: string): RecordVerdict {
  if (values.length === 0) return 'ABSENT';
  const matches = values.some((value) => {
    const tags = parseTags(value);
    const version = tags.get('v');
    const keyType = tags.get('k');
    if (version !== undefined && version !== 'DKIM1') return false;
    if (keyType !== undefined && keyType.toLowerCase() !== 'rsa') return false;
    return (tags.get('p') ?? '').replace(/\s+/g, '') === publicKey;
  });
  return matches ? 'MATCH' : 'MISMATCH';
}

/** RFC 7208: exactly one `v=spf1` record at the domain; two or more is a permanent error. */
export function judgeSpf(values: string[]): RecordVerdict {
  const spf = values.filter((v) => /^v=spf1(\s|$)/i.test(v));
  if (spf.length === 0) return 'ABSENT';
  return spf.length === 1 ? 'MATCH' : 'MISMATCH';
}

/**
 * The return-path CNAME matches when it points at RETURN_PATH_DOMAIN (case and
 * a trailing dot do not matter). A CNAME admits no other record beside it, so
 * one target is all a correct name has.
 */
export function judgeReturnPath(targets: string[], returnPathDomain: string): RecordVerdict {
  return judgeCname(targets, returnPathDomain);
}

/** A CNAME matches when it points at `wanted` (case and a trailing dot do not matter). */
export function judgeCname(targets: string[], wanted: string): RecordVerdict {
  if (targets.length === 0) return 'ABSENT';
  const key = hostKey(wanted);
  return targets.some((target) => hostKey(target) === key) ? 'MATCH' : 'MISMATCH';
}

function hostKey(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}

/** RFC 7489: one `v=DMARC1` record with a valid `p=` policy. */
export function judgeDmarc(values: string[]): RecordVerdict {
  const dmarc = values.filter((v) => /^v\s*=\s*DMARC1\s*(;|$)/i.test(v));
  if (dmarc.length === 0) return 'ABSENT';
  if (dmarc.length > 1) return 'MISMATCH';
  const policy = parseTags(dmarc[0]).get('p')?.toLowerCase();
  return policy === 'none' || policy === 'quarantine' || policy === 'reject' ? 'MATCH' : 'MISMATCH';
}
