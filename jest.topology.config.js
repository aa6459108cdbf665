/**
 * The topology test (`npm run test:topology`): test/topology/*.topology-spec.ts, kept out of
 * `npm test`. It starts its own Postgres primary and replica, PgBouncer, a Redis Cluster and the
 * built service (dist/), runs a 3-minute load with faults and checks the outcome; one file, in band.
 */
module.exports = {
  maxWorkers: 1,
  testTimeout: 600000,
  testEnvironment: 'node',
  rootDir: '.',
  testMatch: ['<rootDir>/test/topology/**/*.topology-spec.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
};
