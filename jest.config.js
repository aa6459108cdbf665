/** Two tiers: unit specs beside the code, end-to-end specs in test/ (real Postgres, Redis, SMTP, DNS). */
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];

/*
 * A few dependencies ship ESM only (content-disposition 3, pulled by @fastify/static 10
 * for Swagger UI). Node runs them through require(esm); Jest's module loader cannot
 * before Node 24, so Jest compiles just those packages to CommonJS.
 */
const ESM_ONLY = ['content-disposition'];
const esmTransform = {
  [`node_modules/(${ESM_ONLY.join('|')})/.+\\.js$`]: ['ts-jest', { tsconfig: { allowJs: true, module: 'commonjs', isolatedModules: true } }],
  '^.+\\.ts$': tsJest,
};
const transformIgnorePatterns = [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`];

module.exports = {
  maxWorkers: 2,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/src/**/*.spec.ts'],
      transform: esmTransform,
      transformIgnorePatterns,
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      transform: esmTransform,
      transformIgnorePatterns,
      testTimeout: 60000,
    },
  ],
};
