#!/usr/bin/env node
/**
 * Writes the OpenAPI document that GET /openapi.json serves, without a server,
 * a database or Redis: Nest builds the module graph in preview mode (nothing is
 * instantiated or connected) and Swagger reads the decorators. Needs a build
 * (dist/). Usage: node scripts/export-openapi.js [out.json] (default var/openapi.json; "-" for stdout).
 */
'use strict';
require('reflect-metadata');
const { mkdirSync, writeFileSync } = require('node:fs');
const { dirname, join, resolve } = require('node:path');
const { NestFactory } = require('@nestjs/core');
const { FastifyAdapter } = require('@nestjs/platform-fastify');

const root = join(__dirname, '..');
const dist = join(root, 'dist');

async function main() {
  const out = process.argv[2] ?? join(root, 'var', 'openapi.json');
  let modules;
  try {
    modules = {
      app: require(join(dist, 'app.module')),
      config: require(join(dist, 'config', 'config')),
      openapi: require(join(dist, 'common', 'openapi', 'document')),
    };
  } catch (error) {
    console.error(`export-openapi: cannot load dist/ (${error.message}); run "npm run build" first`);
    process.exit(1);
  }
  // A fixed secret and a scratch directory: loading the config must not create ./var/app-secret.
  const config = modules.config.loadConfig({ APP_SECRET: 'openapi-export-'.padEnd(48, 'x'), LOG_LEVEL: 'silent' }, root);
  const app = await NestFactory.create(modules.app.AppModule.register(config), new FastifyAdapter(), {
    preview: true,
    logger: false,
    abortOnError: false,
  });
  const document = modules.openapi.buildOpenApiDocument(app, modules.app.RAW_ROUTE_OPENAPI_PATHS);
  await app.close();
  const json = `${JSON.stringify(document, null, 2)}\n`;
  if (out === '-') {
    process.stdout.write(json);
  } else {
    mkdirSync(dirname(resolve(out)), { recursive: true });
    writeFileSync(out, json);
    console.error(`export-openapi: wrote ${out} (${Object.keys(document.paths).length} paths)`);
  }
}

main().catch((error) => {
  console.error('export-openapi failed:', error);
  process.exit(1);
});
