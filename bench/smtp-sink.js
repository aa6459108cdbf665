'use strict';
/**
 * A local SMTP sink for the delivery benchmark, in its own process so it does
 * not share a CPU with the sender being measured. It accepts everything,
 * counts messages, and answers `{type:'stats'}` IPC requests with
 * `{count, firstAt, lastAt}`; `{type:'reset'}` zeroes the counters.
 */
const { SMTPServer } = require('smtp-server');

let count = 0;
let firstAt = 0;
let lastAt = 0;

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  hideSTARTTLS: true,
  // smtp-server looks up the client's address in DNS before its greeting
  // (100-400 ms here, where the resolver is not reachable quickly): a cost of
  // this sink, not of the sender measured, and it landed on every first message.
  disableReverseLookup: true,
  logger: false,
  maxClients: 1000,
  onData(stream, session, callback) {
    stream.on('data', () => undefined);
    stream.on('end', () => {
      const now = Date.now();
      if (count === 0) firstAt = now;
      lastAt = now;
      count++;
      callback(null, 'Queued');
    });
  },
});
server.on('error', () => undefined);

server.listen(0, '127.0.0.1', () => {
  process.send({ type: 'ready', port: server.server.address().port });
});

process.on('message', (message) => {
  if (message.type === 'stats') process.send({ type: 'stats', count, firstAt, lastAt });
  if (message.type === 'reset') {
    count = 0;
    firstAt = 0;
    lastAt = 0;
    process.send({ type: 'reset' });
  }
  if (message.type === 'stop') server.close(() => process.exit(0));
});
