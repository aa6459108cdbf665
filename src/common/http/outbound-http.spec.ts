import { isPublicAddress } from './outbound-http';

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '10.0.0.1',
    '169.254.169.254',
    '::1',
    '::ffff:127.0.0.1',
    // IPv4-compatible IPv6: the URL parser writes [::127.0.0.1] as [::7f00:1].
    '::127.0.0.1',
    '::7f00:1',
    '::a00:1',
    '::',
    'fe80::1',
    'fc00::1',
    '2002:7f00:1::1',
    'not an address',
  ])('refuses %s', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(['8.8.8.8', '2001:4860:4860::8888', '::8.8.8.8'])('allows %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it('sees [::127.0.0.1] in a URL as loopback', () => {
    const host = new URL('http://[::127.0.0.1]:8080/x').hostname.replace(/^\[|\]$/g, '');
    expect(isPublicAddress(host)).toBe(false);
  });
});
