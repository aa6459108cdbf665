'use strict';
/* The baseline of bench/tracking.js: a bare Fastify server answering the same 200 GIF and 302 as /t/o and /t/c. */
const { join } = require('node:path');
const fastify = require(join(__dirname, '..', 'node_modules', 'fastify'));

const PIXEL = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');
const app = fastify({ logger: false });
app.get('/t/o/:token', (_req, reply) => {
  reply.code(200).header('content-type', 'image/gif').header('cache-control', 'no-store').send(PIXEL);
});
app.get('/t/c/*', (_req, reply) => {
  reply.code(302).header('location', 'https://example.com/landing').header('content-type', 'text/plain').send('');
});
app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' }).then(() => process.send?.('ready'));
