/**
 * Jest's test order (jest.config.js `testSequencer`): the slowest spec files first, so the two
 * workers do not end with one long spec running alone. Jest's own sequencer does this only from its
 * cache of the last run on the same machine; a clean CI clone has none and falls back to file size,
 * which put slow specs in short files (inbound-restart, contact-imports-restart, delivery-workers)
 * in the last third. So durations come from the cache when there is one, else from
 * spec-timings.json (committed). A spec found in neither runs first, as in Jest's own order: a new
 * spec may be long, and a long spec started last is the whole tail. Unit specs (src/) without a
 * figure run last: they take a second or two and fill the gaps.
 *
 * Refresh the list after adding or changing a slow spec, from the JSON of a run:
 *   npx jest --json --outputFile=/tmp/run.json <specs>
 *   node test/support/slowest-first-sequencer.js /tmp/run.json
 * (merges those files' wall times, in seconds, into spec-timings.json).
 */
const { existsSync, readFileSync, writeFileSync } = require('node:fs');
const { join, relative } = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const ROOT = join(__dirname, '..', '..');
const TIMINGS = join(__dirname, 'spec-timings.json');

/** Seconds per spec file, by path from the repository root (posix separators). */
function readTimings() {
  return existsSync(TIMINGS) ? JSON.parse(readFileSync(TIMINGS, 'utf8')) : {};
}

const key = (path) => relative(ROOT, path).split('\\').join('/');

class SlowestFirstSequencer extends Sequencer {
  constructor(options) {
    super(options);
    this.timings = readTimings();
  }

  /** Milliseconds, as Jest's cache holds them; undefined sorts first. */
  time(test) {
    const cached = super.time(test);
    if (cached != null) return cached;
    const file = key(test.path);
    const seconds = this.timings[file];
    if (seconds != null) return seconds * 1000;
    return file.startsWith('src/') ? 0 : undefined;
  }
}

module.exports = SlowestFirstSequencer;

if (require.main === module) {
  const runs = process.argv.slice(2);
  if (runs.length === 0) {
    console.error('usage: node test/support/slowest-first-sequencer.js <jest --json output>...');
    process.exit(2);
  }
  const timings = readTimings();
  for (const run of runs) {
    for (const result of JSON.parse(readFileSync(run, 'utf8')).testResults) {
      // A failed run says little of how long the spec takes; a run with tests skipped still counts.
      if (result.status === 'failed') continue;
      timings[key(result.name)] = Math.round((result.endTime - result.startTime) / 100) / 10;
    }
  }
  const sorted = Object.fromEntries(Object.entries(timings).sort(([a], [b]) => (a < b ? -1 : 1)));
  writeFileSync(TIMINGS, JSON.stringify(sorted, null, 2) + '\n');
  console.log(`${Object.keys(sorted).length} spec timings in ${relative(ROOT, TIMINGS)}`);
}
