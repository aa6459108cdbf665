import { DnsRecordPurpose, DnsRecordStatus, DomainStatus } from './domain.entity';
import {
  expectedRecords,
  joinTxt,
  judgeDkim,
  judgeDmarc,
  judgeOwnership,
  judgeReturnPath,
  judgeSpf,
} from './domain-records';
import { nextDomainStatus, nextRecordStatus } from './domain-verification.service';

const KEY = 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtest+key/value==';

describe('expectedRecords', () => {
  it('lists ownership and DKIM as required, SPF, DMARC and the return path as recommended', () => {
    const records = expectedRecords(
      {
        domain: 'example.com',
        ownershipToken: 'tok',
        dkimSelector: 'mwabc',
        dkimPublicKey: KEY,
      },
      'bounces.mail.example.net',
    );
    expect(records.map((r) => [r.purpose, r.type, r.name, r.required])).toEqual([
      [DnsRecordPurpose.OWNERSHIP, 'TXT', '_mailwright.example.com', true],
      [DnsRecordPurpose.DKIM, 'TXT', 'mwabc._domainkey.example.com', true],
      [DnsRecordPurpose.SPF, 'TXT', 'example.com', false],
      [DnsRecordPurpose.DMARC, 'TXT', '_dmarc.example.com', false],
      [DnsRecordPurpose.RETURN_PATH, 'CNAME', 'bounces.example.com', false],
    ]);
    expect(records[0].value).toBe('mailwright-verification=tok');
    expect(records[1].value).toBe(`v=DKIM1; k=rsa; p=${KEY}`);
    expect(records[4].value).toBe('bounces.mail.example.net');
  });
});

describe('judging TXT values', () => {
  it('joins character-strings and drops literal quotes', () => {
    expect(joinTxt(['v=DKIM1; k=rsa; p=MIIB', 'Ijan'])).toBe('v=DKIM1; k=rsa; p=MIIBIjan');
    expect(joinTxt(['"v=spf1 a ~all"'])).toBe('v=spf1 a ~all');
  });

  it('matches the DKIM key regardless of whitespace, tag order and case of k', () => {
    expect(judgeDkim([`v=DKIM1; k=rsa; p=${KEY}`], KEY)).toBe('MATCH');
    expect(judgeDkim([`p=${KEY.slice(0, 20)} ${KEY.slice(20)} ;k=RSA ; v=DKIM1`], KEY)).toBe(
      'MATCH',
    );
    expect(judgeDkim([`p=${KEY}`], KEY)).toBe('MATCH');
  });

  it('reports another key, another version or key type as a mismatch', () => {
    expect(judgeDkim([`v=DKIM1; k=rsa; p=${KEY}x`], KEY)).toBe('MISMATCH');
    expect(judgeDkim([`v=DKIM2; k=rsa; p=${KEY}`], KEY)).toBe('MISMATCH');
    expect(judgeDkim([`v=DKIM1; k=ed25519; p=${KEY}`], KEY)).toBe('MISMATCH');
    expect(judgeDkim([], KEY)).toBe('ABSENT');
  });

  it('finds the ownership token among other TXT values', () => {
    expect(
      judgeOwnership(['google-site-verification=x', 'mailwright-verification=tok'], 'tok'),
    ).toBe('MATCH');
    expect(judgeOwnership(['mailwright-verification=other'], 'tok')).toBe('MISMATCH');
    expect(judgeOwnership([], 'tok')).toBe('ABSENT');
  });

  it('wants exactly one SPF record and one DMARC record with a policy', () => {
    expect(judgeSpf(['v=spf1 include:_spf.example.net ~all', 'unrelated'])).toBe('MATCH');
    expect(judgeSpf(['v=spf1 a ~all', 'v=spf1 mx ~all'])).toBe('MISMATCH');
    expect(judgeSpf(['unrelated'])).toBe('ABSENT');
    expect(judgeDmarc(['v=DMARC1; p=reject; rua=mailto:d@example.com'])).toBe('MATCH');
    expect(judgeDmarc(['v=DMARC1; rua=mailto:d@example.com'])).toBe('MISMATCH');
    expect(judgeDmarc([])).toBe('ABSENT');
  });
});

describe('judging the return-path CNAME', () => {
  it('matches RETURN_PATH_DOMAIN whatever the case or a trailing dot', () => {
    expect(judgeReturnPath(['Bounces.Mail.Example.NET.'], 'bounces.mail.example.net')).toBe(
      'MATCH',
    );
    expect(judgeReturnPath(['rp.elsewhere.example'], 'bounces.mail.example.net')).toBe('MISMATCH');
    expect(judgeReturnPath([], 'bounces.mail.example.net')).toBe('ABSENT');
  });
});

describe('status transitions', () => {
  it('verifies only when both required records match', () => {
    expect(nextDomainStatus(DomainStatus.PENDING, 'MATCH', 'MATCH', false)).toBe(
      DomainStatus.VERIFIED,
    );
    expect(nextDomainStatus(DomainStatus.PENDING, 'MATCH', 'ABSENT', false)).toBe(
      DomainStatus.PENDING,
    );
    expect(nextDomainStatus(DomainStatus.PENDING, 'MATCH', 'MISMATCH', false)).toBe(
      DomainStatus.PENDING,
    );
    expect(nextDomainStatus(DomainStatus.FAILED, 'MATCH', 'MATCH', false)).toBe(
      DomainStatus.VERIFIED,
    );
  });

  it('fails a pending domain after its window and a verified one whose record is gone', () => {
    expect(nextDomainStatus(DomainStatus.PENDING, 'ABSENT', 'ABSENT', true)).toBe(
      DomainStatus.FAILED,
    );
    expect(nextDomainStatus(DomainStatus.VERIFIED, 'MATCH', 'ABSENT', false)).toBe(
      DomainStatus.FAILED,
    );
    expect(nextDomainStatus(DomainStatus.VERIFIED, 'MATCH', 'MISMATCH', false)).toBe(
      DomainStatus.FAILED,
    );
  });

  it('keeps a verified domain through DNS errors', () => {
    expect(nextDomainStatus(DomainStatus.VERIFIED, 'ERROR', 'MATCH', false)).toBe(
      DomainStatus.VERIFIED,
    );
    expect(nextDomainStatus(DomainStatus.VERIFIED, 'ERROR', 'ERROR', false)).toBe(
      DomainStatus.VERIFIED,
    );
    expect(nextRecordStatus('ERROR', DnsRecordStatus.VERIFIED, true)).toBe(
      DnsRecordStatus.VERIFIED,
    );
  });

  it('shows an unpublished record as PENDING while the domain is pending, FAILED after', () => {
    expect(nextRecordStatus('ABSENT', undefined, false)).toBe(DnsRecordStatus.PENDING);
    expect(nextRecordStatus('ABSENT', DnsRecordStatus.VERIFIED, true)).toBe(DnsRecordStatus.FAILED);
    expect(nextRecordStatus('MISMATCH', undefined, false)).toBe(DnsRecordStatus.FAILED);
  });
});
