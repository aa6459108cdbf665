'use strict';
/**
 * Preloaded into the soak's worker process (`node -r bench/soak-probe.js
 * dist/main.js`): a worker serves no HTTP, so it has no GET /metrics to read
 * its event-loop lag from. This measures the lag the way prom-client's
 * default metrics do in the API process (perf_hooks.monitorEventLoopDelay,
 * 10 ms resolution, the histogram reset at each reading) and answers the
 * soak's IPC message `{type:'sample'}` with `{type:'sample', rss, heapUsed,
 * lagP99, lagMax}` (bytes; seconds, raw histogram values as prom-client
 * reports them). The IPC channel is unref'd: it never keeps the process alive.
 */
const { monitorEventLoopDelay } = require('node:perf_hooks');

if (process.send) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  process.on('message', (message) => {
    if (!message || message.type !== 'sample') return;
    const { rss, heapUsed } = process.memoryUsage();
    const reply = { type: 'sample', rss, heapUsed, lagP99: histogram.percentile(99) / 1e9, lagMax: histogram.max / 1e9 };
    histogram.reset();
    process.send(reply);
  });
  process.channel?.unref();
}
