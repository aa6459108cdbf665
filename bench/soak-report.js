'use strict';
/**
 * The soak's report: `report.md` (settings, verdict, samples), `soak.png`
 * (the sampled series, drawn with Vega-Lite into SVG and rasterized by resvg,
 * both server-side with no browser or canvas) and `soak.json` (the data, so
 * `node bench/soak.js --render <json>` draws them again).
 */
const { mkdirSync, writeFileSync } = require('node:fs');
const { join, relative } = require('node:path');

const ROOT = join(__dirname, '..');

async function writeReport(result, outDir) {
  mkdirSync(outDir, { recursive: true });
  const paths = { report: join(outDir, 'report.md'), chart: join(outDir, 'soak.png'), data: join(outDir, 'soak.json') };
  writeFileSync(paths.data, JSON.stringify(result, null, 1) + '\n');
  writeFileSync(paths.chart, await renderChart(result));
  writeFileSync(paths.report, renderMarkdown(result));
  return Object.fromEntries(Object.entries(paths).map(([k, p]) => [k, relative(ROOT, p)]));
}

// ------------------------------------------------------------------ chart

const PANELS = [
  ['RSS (MB)', [['API', 'apiRssMB'], ['worker', 'workerRssMB']]],
  ['Event-loop lag p99 (ms)', [['API', 'apiLagP99Ms'], ['worker', 'workerLagP99Ms']]],
  [
    'CPU (% of one core)',
    [['API', 'apiCpuPct'], ['worker', 'workerCpuPct'], ['Postgres (its database)', 'pgCpuPct'], ['load generator + sink', 'harnessCpuPct'], ['anything else', 'othersCpuPct'], ['whole machine (of 200)', 'machineCpuPct']],
  ],
  ['Postgres connections', [['its database', 'pgConnections']]],
  ['Redis used_memory (MB)', [['whole server', 'redisUsedMemoryMB']]],
  ['Queue depth (jobs)', [['all queues', 'queueDepth']]],
  ['Tracks per second', [['answered 200', 'tracksPerSecond']]],
  ['Recipients per second', [['accepted by the API', 'sendRecipientsPerSecond'], ['at the SMTP sink', 'deliveredPerSecond']]],
];
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#d62728', '#7f7f7f'];

function chartSpec(result) {
  const loadSamples = result.samples.filter((s) => s.phase === 'load');
  const loadEnd = loadSamples.length ? loadSamples[loadSamples.length - 1].t / 60 : 0;
  const xMax = Math.max(...result.samples.map((s) => s.t)) / 60;
  const panels = PANELS.map(([title, series], index) => {
    const values = [];
    for (const s of result.samples) {
      for (const [name, key] of series) if (s[key] !== null && s[key] !== undefined) values.push({ t: s.t / 60, series: name, value: s[key] });
    }
    return {
      title: { text: title, anchor: 'start', fontSize: 13 },
      width: 760,
      height: 95,
      layer: [
        {
          data: { values: [{ from: loadEnd, to: xMax }] },
          mark: { type: 'rect', color: '#eeeeee' },
          encoding: { x: { field: 'from', type: 'quantitative' }, x2: { field: 'to' } },
        },
        {
          data: { values },
          mark: { type: 'line', strokeWidth: 1.6, point: { size: 9 } },
          encoding: {
            x: {
              field: 't',
              type: 'quantitative',
              scale: { domain: [0, xMax], nice: false },
              title: index === PANELS.length - 1 ? 'minutes since the load started (grey: load stopped, queues draining)' : null,
            },
            y: { field: 'value', type: 'quantitative', title: null, scale: { zero: true } },
            color: { field: 'series', type: 'nominal', title: null, sort: null, scale: { domain: series.map(([name]) => name), range: PALETTE } },
          },
        },
      ],
    };
  });
  const r = result.rates;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `Mailwright soak: ${result.verdict.pass ? 'PASS' : 'FAIL'}`,
      subtitle: `${r.trackPerSecond.toFixed(0)} tracks/s + ${r.sendRecipientsPerSecond.toFixed(0)} recipients/s for ${result.settings.minutes} min (${Math.round(result.settings.load * 100)}% of measured capacity), ${result.startedAt.slice(0, 16).replace('T', ' ')} UTC, ${result.build.commit}`,
      anchor: 'start',
      fontSize: 16,
      offset: 14,
    },
    background: 'white',
    padding: 12,
    config: { font: 'DejaVu Sans', legend: { orient: 'right', labelLimit: 200 }, view: { stroke: '#dddddd' } },
    spacing: 18,
    resolve: { scale: { color: 'independent' } },
    vconcat: panels,
  };
}

async function renderChart(result) {
  const vega = await import('vega');
  const vl = await import('vega-lite');
  const { Resvg } = require('@resvg/resvg-js');
  const view = new vega.View(vega.parse(vl.compile(chartSpec(result)).spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  const resvg = new Resvg(svg, {
    background: 'white',
    fitTo: { mode: 'zoom', value: 1.5 },
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans', sansSerifFamily: 'DejaVu Sans' },
  });
  return resvg.render().asPng();
}

// --------------------------------------------------------------- markdown

const f0 = (x) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : Math.round(x).toLocaleString('en-US'));
const f1 = (x) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(1));
const pct = (x) => `${(x * 100).toFixed(1)} %`;

function renderMarkdown(result) {
  const { settings: s, capacity: c, rates, load, drain, verdict: v, build: b, machine: m } = result;
  const lines = [];
  const add = (...x) => lines.push(...x);
  add(
    '# Soak report',
    '',
    `Written by \`npm run soak\` (bench/soak.js) on ${result.startedAt.slice(0, 19).replace('T', ' ')} UTC; regenerate the chart and this file from`,
    '[soak.json](soak.json) with `node bench/soak.js --render docs/soak/soak.json`.',
    '',
    `**Verdict: ${v.pass ? 'PASS' : 'FAIL'}**`,
    '',
    ...v.lines.map((l) => `- ${l}`),
    '',
    '![soak chart](soak.png)',
    '',
    '## Settings',
    '',
    '| | |',
    '|---|---|',
    `| build | ${b.source ?? 'working tree'} (commit \`${b.commit}\`${b.srcChanged ? ', with uncommitted changes under src/' : ''}), compiled into \`${b.dist}\`; Node ${b.node}, PostgreSQL ${b.postgres}, Redis ${b.redis} |`,
    `| machine | ${m.cpus} cores (${m.cpuModel}), ${m.memoryGiB} GiB; Postgres, Redis, the API, the worker, the SMTP sink and the load generator all on it; load average ${m.loadAverageAtStart.join(' / ')} at the start |`,
    `| processes | one API (\`APP_ROLE=api\`) and one worker (\`APP_ROLE=worker\`), a database and a queue prefix of their own, SMTP to a local sink (bench/smtp-sink.js, its own process); \`EMAIL_RATE_PER_SECOND=${f0(s.emailRatePerSecond)}\` and the API rate limit lifted |`,
    `| track capacity | ${capacityTrack(c.track)} |`,
    `| send capacity | ${capacitySend(c.send)} |`,
    `| offered load | ${s.load * 100} % of capacity, shared ${s.trackShare * 100} % / ${(1 - s.trackShare) * 100} %: **${f0(rates.trackPerSecond)} tracks/s** + **${f0(rates.sendRecipientsPerSecond)} recipients/s** (${f1(rates.sendRequestsPerSecond)} \`POST /v1/send\` a second, ${s.recipientsPerSend} recipients each), open loop, for **${s.minutes} min** |`,
    `| sampling | every ${s.sampleSeconds} s; RSS growth judged over the last ${s.rssWindowSeconds / 60} min of load; queues must be empty ${s.drainLimitSeconds} s after the load stops |`,
    '',
    'Method: capacity is measured first with both processes up (track: a closed loop at full speed; send:',
    'end to end, from the first `POST /v1/send` to the last message at the sink, since delivery and not',
    'the API is what a sustained send load must keep up with). Track and send each saturate the machine',
    'alone, so the load runs both at once at shares of the capacity that add up to the load factor',
    '(80 % of both at once would be 160 % of the machine). Requests are offered at a fixed rate (open loop)',
    'whatever the answer times; an error is any answer but 2xx, a connection error or a 30 s timeout.',
    '',
    '## Results',
    '',
    '| | answered 2xx | rate | p50 | p99 | max | errors | skipped (generator at its in-flight cap) |',
    '|---|---|---|---|---|---|---|---|',
    `| \`POST /v1/track\` | ${f0(load.track.ok)} | ${f0(load.track.okPerSecond)} /s | ${f1(load.track.p50)} ms | ${f1(load.track.p99)} ms | ${f0(load.track.max)} ms | ${load.track.errors} | ${load.track.skipped} |`,
    `| \`POST /v1/send\` | ${f0(load.send.ok)} (${f0(load.send.ok * s.recipientsPerSend)} recipients) | ${f0(load.send.recipientsPerSecond)} recipients/s | ${f1(load.send.p50)} ms | ${f1(load.send.p99)} ms | ${f0(load.send.max)} ms | ${load.send.errors} | ${load.send.skipped} |`,
    '',
    `- Drain: the queues were empty **${drain.queuesSeconds === null ? `not within ${drain.waitedUpTo}` : f1(drain.queuesSeconds)} s** after the load stopped, every email final (no \`QUEUED\` or \`SENDING\` row) after ${drain.emailsFinalSeconds === null ? `more than ${drain.waitedUpTo}` : f1(drain.emailsFinalSeconds)} s.`,
    `- Emails by status at the end (capacity measurement included): ${Object.entries(result.emails.byStatus).map(([k, n]) => `${k} ${f0(n)}`).join(', ')}; messages the sink accepted from the start of the send measurement on: ${f0(result.emails.sinkSinceSendMeasure)}.`,
    `- Peak RSS: API ${v.rss.api.peak} MB, worker ${v.rss.worker.peak} MB. Peak event-loop lag p99 during the load: API ${f1(peak(result, 'apiLagP99Ms'))} ms, worker ${f1(peak(result, 'workerLagP99Ms'))} ms (max ${f1(peak(result, 'apiLagMaxMs'))} / ${f1(peak(result, 'workerLagMaxMs'))} ms). Postgres connections at most ${peak(result, 'pgConnections', false)}; queue depth at most ${f0(peak(result, 'queueDepth', false))} jobs.`,
    `- ${machineLine(result)}`,
    `- \`GET /metrics\` without the token answered ${result.metricsWithoutToken} (\`METRICS_TOKEN\` set).`,
    '',
    'Every answer of the run by phase (the load generator\'s count):',
    '',
    '| phase | answers |',
    '|---|---|',
    ...Object.entries(result.answers.statuses).map(([phase, st]) => `| ${phase} | ${Object.entries(st).map(([k, n]) => `${k}: ${f0(n)}`).join(', ')} |`),
    '',
  );
  if (result.answers.firstErrors.length) {
    add('First error answers:', '', ...result.answers.firstErrors.map((e) => `- ${e.phase} ${e.status}: \`${e.detail.replace(/`/g, "'")}\``), '');
  }
  add(
    'The API\'s own count (`mailwright_http_request_duration_seconds_count` at the end, since the API started):',
    '',
    '| route | method | status | requests |',
    '|---|---|---|---|',
    ...result.apiHttpCounts.map((h) => `| \`${h.route}\` | ${h.method} | ${h.status} | ${f0(h.count)} |`),
    '',
    '## Samples',
    '',
    'RSS and heap in MB; event-loop lag in ms over the 10 s before the sample (p99 and max of the',
    'monitorEventLoopDelay histogram less its 10 ms resolution: the API\'s from its own `GET /metrics`,',
    'the worker\'s from bench/soak-probe.js, the same measure); Postgres connections to the soak\'s',
    'database; Redis `used_memory` of the whole server; queue depth is waiting + prioritized + delayed +',
    'active jobs of every queue (the recovery schedulers\' next runs left out); CPU in % of one core over',
    'the 10 s before the sample: API, worker, the Postgres backends of the soak\'s database, harness (the',
    'load generator and the SMTP sink), else (the rest of the machine\'s busy time: Redis, the kernel, and',
    'whatever else ran on the machine), machine (all of it, 200 = both cores busy); load avg is the',
    '1-minute load average; rates are per second over the 10 s before the sample; p99 in ms.',
    '',
    '| t (s) | phase | RSS API | RSS worker | heap API | heap worker | lag p99 API | lag p99 worker | lag max API | lag max worker | CPU API | CPU worker | CPU pg | CPU harness | CPU else | CPU machine | load avg | pg conns | Redis MB | queue depth | tracks/s | recipients/s | sent/s | errors | track p99 | send p99 |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...result.samples.map(
      (x) =>
        `| ${x.t} | ${x.phase} | ${x.apiRssMB} | ${x.workerRssMB} | ${x.apiHeapMB} | ${x.workerHeapMB} | ${f1(x.apiLagP99Ms)} | ${f1(x.workerLagP99Ms)} | ${f1(x.apiLagMaxMs)} | ${f1(x.workerLagMaxMs)} | ${x.apiCpuPct} | ${x.workerCpuPct} | ${x.pgCpuPct} | ${x.harnessCpuPct} | ${x.othersCpuPct} | ${x.machineCpuPct} | ${x.loadAverage} | ${x.pgConnections} | ${x.redisUsedMemoryMB} | ${f0(x.queueDepth)} | ${f0(x.tracksPerSecond)} | ${f0(x.sendRecipientsPerSecond)} | ${f0(x.deliveredPerSecond)} | ${x.errors} | ${f1(x.trackP99Ms)} | ${f1(x.sendP99Ms)} |`,
    ),
    '',
  );
  return lines.join('\n');
}

/** How much of the machine other work took during the load (the soak shares it with whatever else runs). */
function machineLine(result) {
  const load = result.samples.filter((x) => x.phase === 'load' && Number.isFinite(x.othersCpuPct));
  if (!load.length) return 'Machine: no CPU figures recorded.';
  const busy = load.filter((x) => x.othersCpuPct > 50);
  const saturated = load.filter((x) => x.machineCpuPct >= 195);
  const skipped = result.load.track.skipped + result.load.send.skipped;
  const median = [...load.map((x) => x.othersCpuPct)].sort((a, b) => a - b)[Math.floor(load.length / 2)];
  const half = Math.ceil(load.length / 2);
  const firstHalf = load.slice(0, half).filter((x) => x.othersCpuPct > 50).length;
  const when = busy.length ? ` (${firstHalf} in the first half of the load, ${busy.length - firstHalf} in the second)` : '';
  return (
    `Machine: CPU outside the soak's processes (Redis, Postgres's own background work, the kernel, other sessions' jobs) ` +
    `was ${median} % of a core at the median load sample and above 50 % in ${busy.length} of ${load.length}${when}, at most ${Math.max(...load.map((x) => x.othersCpuPct))} %; ` +
    `both cores were saturated in ${saturated.length} samples. ` +
    (skipped
      ? `The offered load was not fully served: the generator skipped ${f0(skipped)} requests (${pct(skipped / (skipped + result.load.track.issued + result.load.send.issued))}) when ${f0(512)} tracks or 128 sends were already in flight.`
      : 'The generator never reached its in-flight cap: the offered load was served.')
  );
}

function capacityTrack(t) {
  if (!t.measured) return `${f0(t.perSecond)} req/s (given, not measured)`;
  return `**${f0(t.perSecond)} req/s** measured: \`POST /v1/track\` closed loop, 64 connections, ${f0(t.requests / t.perSecond)} s, both processes up (p50 ${f1(t.p50)} ms, p99 ${f1(t.p99)} ms, ${t.errors} errors)`;
}

function capacitySend(c) {
  if (!c.measured) return `${f0(c.recipientsPerSecond)} recipients/s (given, not measured)`;
  return `**${f0(c.recipientsPerSecond)} recipients/s** measured end to end: ${f0(c.recipients)} recipients through \`POST /v1/send\` (16 connections; the API took them at ${f0(c.apiRecipientsPerSecond)}/s) until the sink accepted the last (${f1(c.seconds)} s); delivery is the limit, ${c.errors} errors`;
}

function peak(result, key, load = true) {
  const values = result.samples.filter((s) => !load || s.phase === 'load').map((s) => s[key]).filter((x) => Number.isFinite(x));
  return values.length ? Math.max(...values) : null;
}

module.exports = { writeReport, chartSpec };
