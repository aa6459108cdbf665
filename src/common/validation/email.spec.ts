import { hasDotAtomLocalPart } from './email';

describe('hasDotAtomLocalPart', () => {
  it.each([
    'news@acme.com',
    'first.last@acme.com',
    "o'brien+tag@acme.com",
    'jörg@acme.com',
    'a{b}|c~d@acme.com',
  ])('accepts %s', (address) => expect(hasDotAtomLocalPart(address)).toBe(true));

  it.each([
    '"x@bank.com"@acme.com',
    '"a b"@acme.com',
    '.a@acme.com',
    'a.@acme.com',
    'a..b@acme.com',
    '@acme.com',
    'a(b)@acme.com',
  ])('refuses %s', (address) => expect(hasDotAtomLocalPart(address)).toBe(false));
});
