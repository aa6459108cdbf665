/** Two tiers: unit specs beside the code, end-to-end specs in test/ (real Postgres, Redis, SMTP, DNS). */
const transform = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] };

module.exports = {
  maxWorkers: 2,
  // The slowest spec files first (durations in test/support/spec-timings.json): no long tail on one worker.
  testSequencer: '<rootDir>/test/support/slowest-first-sequencer.js',
  // A global option: Jest ignores it inside a project. End-to-end hooks start databases and apps.
  testTimeout: 60000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/src/**/*.spec.ts'],
      transform,
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      transform,
    },
  ],
};
