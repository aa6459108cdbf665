import { groupOfDomainName, groupOfMxAnswer, recipientDomain } from './provider-groups';

describe('provider groups', () => {
  it('knows the contract’s domains by name', () => {
    const cases: Array<[string, string | null]> = [
      ['gmail.com', 'google'],
      ['GoogleMail.com', 'google'],
      ['outlook.com', 'microsoft'],
      ['hotmail.com', 'microsoft'],
      ['hotmail.co.uk', 'microsoft'],
      ['live.fr', 'microsoft'],
      ['msn.com', 'microsoft'],
      ['yahoo.com', 'yahoo'],
      ['yahoo.co.jp', 'yahoo'],
      ['ymail.com', 'yahoo'],
      ['rocketmail.com', 'yahoo'],
      ['aol.com', 'yahoo'],
      ['icloud.com', 'apple'],
      ['me.com', 'apple'],
      ['mac.com', 'apple'],
      // Only MX can tell for anything else, subdomains of the providers included.
      ['example.com', null],
      ['mail.yahoo.com', null],
      ['notgmail.com', null],
      ['localhost', null],
    ];
    for (const [domain, group] of cases)
      expect([domain, groupOfDomainName(domain)]).toEqual([domain, group]);
  });

  it('groups other domains by their most preferred MX host, on whole labels', () => {
    const mx = (...hosts: Array<[string, number]>) =>
      ({
        kind: 'FOUND',
        records: hosts.map(([exchange, priority]) => ({ exchange, priority })),
      }) as const;
    expect(groupOfMxAnswer(mx(['aspmx.l.google.com', 1], ['alt1.aspmx.l.google.com', 5]))).toBe(
      'google',
    );
    expect(groupOfMxAnswer(mx(['smtp.googlemail.com', 10]))).toBe('google');
    expect(groupOfMxAnswer(mx(['acme-com.mail.protection.outlook.com', 0]))).toBe('microsoft');
    expect(groupOfMxAnswer(mx(['mx-eu.mail.am0.yahoodns.net', 1]))).toBe('yahoo');
    expect(groupOfMxAnswer(mx(['mx.notgoogle.com', 1]))).toBe('other');
    // A filter in front of Google receives the mail: it is the filter's server that paces us.
    expect(groupOfMxAnswer(mx(['filter.example.net', 1], ['aspmx.l.google.com', 10]))).toBe(
      'other',
    );
    expect(groupOfMxAnswer({ kind: 'ABSENT', nxdomain: true })).toBe('other');
    expect(groupOfMxAnswer({ kind: 'ERROR', code: 'ETIMEOUT' })).toBe('other');
  });

  it('takes the domain of an address', () => {
    expect(recipientDomain('Ann@Gmail.COM')).toBe('gmail.com');
    expect(recipientDomain('"a@b"@example.org')).toBe('example.org');
  });
});
