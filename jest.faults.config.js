/**
 * The fault suite (`npm run test:faults`): test/faults/*.fault-spec.ts, kept out of `npm test`.
 * Each scenario starts its own PostgreSQL and Redis servers and the built service (dist/, which
 * `npm test` builds), so one file at a time, in band.
 */
module.exports = {
  maxWorkers: 1,
  testTimeout: 900000,
  testEnvironment: 'node',
  rootDir: '.',
  testMatch: ['<rootDir>/test/faults/**/*.fault-spec.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
};
