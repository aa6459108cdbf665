'use strict';
/**
 * CPU accounting for the benchmarks, from Linux /proc (clock ticks of 1/100 s):
 * what a process, a database's Postgres backends, the local redis-server and
 * the whole machine have used, read before and after a measured phase.
 */
const { readFileSync, readdirSync } = require('node:fs');

/** The process's user and system CPU seconds (system: the kernel's work for its syscalls, loopback sockets' delivery included). */
function procCpuSplit(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
  } catch {
    return { user: NaN, system: NaN };
  }
}

/** CPU seconds a process has used so far (utime + stime). */
function procCpuSeconds(pid) {
  const { user, system } = procCpuSplit(pid);
  return user + system;
}

/** The pids whose command line passes `test`. */
function pidsWhere(test) {
  const pids = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))) pids.push(pid);
    } catch {
      // gone
    }
  }
  return pids;
}

/** CPU seconds per live Postgres backend connected to `database` (its cmdline names it): pid -> seconds. */
function postgresCpuSeconds(database) {
  return new Map(pidsWhere((cmdline) => cmdline.includes(` ${database} `)).map((pid) => [pid, procCpuSeconds(pid)]));
}

/** CPU the backends alive at `after` used since `before` (a backend that exited in between is not counted). */
function backendsDelta(before, after) {
  let sum = 0;
  for (const [pid, seconds] of after) sum += seconds - (before.get(pid) ?? 0);
  return sum;
}

/** CPU seconds of the local redis-server (shared with whatever else uses it). */
function redisCpuSeconds() {
  const [pid] = pidsWhere((cmdline) => cmdline.startsWith('redis-server'));
  return pid ? procCpuSeconds(pid) : NaN;
}

/** Busy and total CPU seconds of the whole machine, all cores (/proc/stat; guest time is already in user). */
function machineCpuSeconds() {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const total = ticks.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - ticks[3] - ticks[4]) / 100, total: total / 100 };
}

module.exports = {
  backendsDelta,
  machineCpuSeconds,
  postgresCpuSeconds,
  procCpuSeconds,
  procCpuSplit,
  redisCpuSeconds,
};
