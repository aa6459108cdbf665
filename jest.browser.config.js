/**
 * Browser journeys (`npm run test:browser`): the built service (dist/main.js with dist/web) driven
 * by Debian's Chromium through playwright-core. Not in `npm test`: they need /usr/bin/chromium
 * (CHROMIUM_PATH overrides) and a build.
 */
module.exports = {
  testEnvironment: 'node',
  rootDir: '.',
  testMatch: ['<rootDir>/test/browser/**/*.browser-spec.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  maxWorkers: 1,
  testTimeout: 120000,
};
