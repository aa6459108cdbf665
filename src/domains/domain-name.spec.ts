import { normalizeDomainName, senderDomainOf } from './domain-name';

describe('normalizeDomainName', () => {
  it.each([
    ['example.com', 'example.com'],
    ['  Mail.Example.COM ', 'mail.example.com'],
    ['bücher.example', 'xn--bcher-kva.example'],
    ['BÜCHER.example', 'xn--bcher-kva.example'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
    ['alice.github.io', 'alice.github.io'],
    ['news.acme.co.uk', 'news.acme.co.uk'],
    ['mail.acme.test', 'mail.acme.test'],
  ])('accepts %s as %s', (input, stored) => {
    expect(normalizeDomainName(input)).toEqual({ ok: true, domain: stored });
  });

  it.each([
    ['https://x.com/', 'scheme'],
    ['x.com/path', 'scheme'],
    ['x.com:25', 'port'],
    ['user@x.com', 'address'],
    ['x.com.', 'dot'],
    ['localhost', 'two labels'],
    ['com', 'two labels'],
    ['co.uk', 'public suffix'],
    ['github.io', 'public suffix'],
    ['127.0.0.1', 'IP'],
    ['-a.com', 'hyphen'],
    ['a_b.com', 'hyphen'],
    ['a..com', 'hyphen'],
    ['', 'empty'],
    ['corp.internal', 'not a public name'],
    ['mail.svc.cluster.local', 'not a public name'],
    ['printer.local', 'not a public name'],
    ['app.localhost', 'not a public name'],
    ['intranet.corp', 'not a public name'],
    ['router.home.arpa', 'not a public name'],
  ])('refuses %s', (input, reasonPart) => {
    const result = normalizeDomainName(input);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain(reasonPart);
  });

  it('refuses names over 253 characters as too long', () => {
    const long = `${'a'.repeat(60)}.`.repeat(5) + 'com';
    expect(normalizeDomainName(long)).toMatchObject({ ok: false, tooLong: true });
  });
});

describe('senderDomainOf', () => {
  it.each([
    ['hello@example.com', 'example.com'],
    ['Acme <Hello@Example.COM>', 'example.com'],
    ['"Acme, Inc" <a@news.example.com>', 'news.example.com'],
    ['a@bücher.example', 'xn--bcher-kva.example'],
  ])('%s -> %s', (address, domain) => {
    expect(senderDomainOf(address)).toBe(domain);
  });

  it.each(['no-at-sign', 'a@', '@example.com', 'a@example.com.'])(
    '%s has no usable domain',
    (address) => {
      expect(senderDomainOf(address)).toBeNull();
    },
  );
});
