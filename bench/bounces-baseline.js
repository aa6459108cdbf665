'use strict';
/**
 * The baseline of bench/bounces.js: a bare smtp-server that accepts every
 * recipient and parses each message with mailparser before answering 250
 * (no token check, no storage, no queue, no policy). It parses with the
 * options the service's parser uses (src/inbound/parsers: no HTML/text
 * conversions, the report parts kept, embedded messages not merged), the
 * cheapest way to read a report, so the service is not compared with a
 * slower parse than its own. Answers `{type:'stats'}` IPC requests with the
 * number of messages parsed.
 */
const { join } = require('node:path');
const { SMTPServer } = require('smtp-server');
const { simpleParser } = require('mailparser');

// The service's own parser options, from the build under test.
const { PARSER_OPTIONS } = require(
  join(process.env.BENCH_DIST || join(__dirname, '..', 'dist'), 'inbound/parsers/index.js'),
);

let parsed = 0;
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  disableReverseLookup: true,
  logger: false,
  size: 10 * 1024 * 1024,
  onData(stream, session, callback) {
    const chunks = [];
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('end', () => {
      simpleParser(Buffer.concat(chunks), PARSER_OPTIONS).then(
        () => {
          parsed++;
          callback(null, 'OK');
        },
        (error) => callback(error),
      );
    });
  },
});
server.on('error', () => undefined);
server.listen(0, '127.0.0.1', () => process.send({ type: 'ready', port: server.server.address().port }));
process.on('message', (message) => {
  if (message.type === 'stats') process.send({ type: 'stats', parsed });
  if (message.type === 'stop') server.close(() => process.exit(0));
});
