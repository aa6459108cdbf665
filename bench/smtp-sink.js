'use strict';
/**
 * A local SMTP sink for the delivery benchmark, in its own process so it does
 * not share a CPU with the sender being measured. It accepts everything,
 * counts messages, and answers `{type:'stats'}` IPC requests with
 * `{count, firstAt, lastAt, domains, deferred}` (`domains`: the same per
 * recipient domain); `{type:'reset'}` zeroes the counters and
 * `{type:'throttle', domain, perSecond}` makes RCPT TO for that domain answer
 * `421 4.7.28` past `perSecond` a clock second (bench:pacing; domain null: off).
 */
const { SMTPServer } = require('smtp-server');

let count = 0;
let firstAt = 0;
let lastAt = 0;
let domains = {};
let deferred = 0;
let throttle = null;

function domainOf(address) {
  return String(address).slice(String(address).lastIndexOf('@') + 1).toLowerCase();
}

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
  onRcptTo(address, session, callback) {
    if (!throttle || domainOf(address.address) !== throttle.domain) return callback();
    const second = Math.floor(Date.now() / 1000);
    if (second !== throttle.second) Object.assign(throttle, { second, count: 0 });
    if (throttle.count < throttle.perSecond) {
      throttle.count++;
      return callback();
    }
    deferred++;
    const error = new Error('4.7.28 Our system has detected an unusual rate of unsolicited mail');
    error.responseCode = 421;
    callback(error);
  },
  onData(stream, session, callback) {
    stream.on('data', () => undefined);
    stream.on('end', () => {
      const now = Date.now();
      if (count === 0) firstAt = now;
      lastAt = now;
      count++;
      const domain = domainOf(session.envelope.rcptTo[0]?.address ?? '');
      const stats = (domains[domain] ??= { count: 0, firstAt: now, lastAt: now });
      stats.count++;
      stats.lastAt = now;
      callback(null, 'Queued');
    });
  },
});
server.on('error', () => undefined);

server.listen(0, '127.0.0.1', () => {
  process.send({ type: 'ready', port: server.server.address().port });
});

process.on('message', (message) => {
  if (message.type === 'stats') process.send({ type: 'stats', count, firstAt, lastAt, domains, deferred });
  if (message.type === 'throttle') {
    throttle = message.domain ? { domain: message.domain, perSecond: message.perSecond, second: 0, count: 0 } : null;
    process.send({ type: 'throttle' });
  }
  if (message.type === 'reset') {
    count = 0;
    firstAt = 0;
    lastAt = 0;
    domains = {};
    deferred = 0;
    throttle = null;
    process.send({ type: 'reset' });
  }
  if (message.type === 'stop') server.close(() => process.exit(0));
});
