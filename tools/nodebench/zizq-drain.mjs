// Drain benchmark for the zizq job server through the official zizq Node
// client (@zizq-labs/zizq; ZIZQ_CLIENT names its built dist/index.js when
// it is not installed as a package, see README.md).
//
// The shape of the client's own throughput benchmark, without its scan:
//   1. delete leftover jobs on the bench queue (not timed)
//   2. enqueue JOB_COUNT jobs with client.enqueueBulk in bulks of 1,000 (timed)
//   3. drain them with a Worker whose handler does nothing (timed). The end
//      time is taken when worker.run() resolves after worker.stop().
//
// When to call worker.stop(): the Worker buffers success acks and sends them
// in bulk (client.reportSuccessBulk) shortly after each handler returns.
// stop() aborts the take stream at once, and the server then puts the jobs
// still unacknowledged on that stream back to "ready"; acks that arrive after
// that are answered 422, which reportSuccessBulk accepts silently. Stopping
// straight from the JOB_COUNT-th handler therefore leaves up to PREFETCH
// jobs requeued, not completed (seen in the smoke test: 180-200 of 2,000).
// So this script observes the client's own bulk-ack calls (a thin wrapper
// around client.reportSuccessBulk that counts the ids once the server has
// answered) and calls stop() once the acks of all JOB_COUNT jobs have been
// answered. The end time therefore marks the point at which
// the server has completed every job, like the JOB_COUNT-th 'completed'
// event in bull-drain.mjs.
//
// Env: ZIZQ_URL (default http://127.0.0.1:7890), ZIZQ_FORMAT (json|msgpack,
// default json), JOB_COUNT (default 100000), CONCURRENCY (default 100),
// PREFETCH (default 2 x CONCURRENCY), TIMEOUT_S (common.mjs), ACK_TRACE
// (1: one more line on stderr on where the drain's loop spends its time,
// see ackTrace below).
//
// Prints exactly one JSON line on stdout; all diagnostics go to stderr.
// Needs Node >= 22.19 (the client's own requirement).

import { armTimeout, enqueueTimed, positiveInt, printResult } from "./common.mjs";

const { Client, Worker } = await import(process.env.ZIZQ_CLIENT || "@zizq-labs/zizq");

const URL = process.env.ZIZQ_URL || "http://127.0.0.1:7890";
const FORMAT = process.env.ZIZQ_FORMAT || "json";
const JOB_COUNT = positiveInt("JOB_COUNT", 100000);
const CONCURRENCY = positiveInt("CONCURRENCY", 100);
const PREFETCH = positiveInt("PREFETCH", CONCURRENCY * 2);
const QUEUE = "node/bench";

if (FORMAT !== "json" && FORMAT !== "msgpack") {
  console.error(`ZIZQ_FORMAT must be json or msgpack, got ${FORMAT}`);
  process.exit(64);
}
armTimeout("zizq-drain");

// Keep stdout for the single JSON result line.
const logger = {
  info: (...args) => console.error(...args),
  error: (...args) => console.error(...args),
};

console.error(
  `zizq-drain: url=${URL} format=${FORMAT} jobs=${JOB_COUNT} ` +
    `concurrency=${CONCURRENCY} prefetch=${PREFETCH}`,
);

const client = new Client({ url: URL, format: FORMAT });
const trace = process.env.ACK_TRACE === "1" ? ackTrace() : null;

// ackTrace records each bulk ack the Worker sends: when, how many jobs and
// how long until its answer, and when the next job reached the handler
// after it was sent (the server dispatches the next jobs on receipt, so
// that is the stream's round trip). The Worker sends one bulk ack at a
// time, so the drain runs at batch size / cycle, the time from one ack to
// the next.
function ackTrace() {
  const acks = []; // [sent at, ms to answer, ids, ms to the next handled job]
  let waiting = null;
  const quantile = (v, f) => v[Math.min(v.length - 1, Math.floor(v.length * f))].toFixed(2);
  const stats = (v) => {
    v = [...v].sort((a, b) => a - b);
    const mean = v.reduce((a, b) => a + b, 0) / v.length;
    return `p50 ${quantile(v, 0.5)} p90 ${quantile(v, 0.9)} p99 ${quantile(v, 0.99)} mean ${mean.toFixed(2)}`;
  };
  return {
    sent(n) {
      const a = [performance.now(), 0, n, NaN];
      acks.push(a);
      waiting = a;
      return a;
    },
    answered(a) { a[1] = performance.now() - a[0]; },
    handled() {
      if (waiting) {
        waiting[3] = performance.now() - waiting[0];
        waiting = null;
      }
    },
    report() {
      const a = acks.slice(Math.min(20, acks.length >> 2)); // past the start
      if (a.length < 2) return;
      const cycles = a.slice(1).map((x, i) => x[0] - a[i][0]);
      const next = a.map((x) => x[3]).filter((x) => !Number.isNaN(x));
      console.error(
        `zizq-drain: ${acks.length} acks of ${stats(a.map((x) => x[2]))} jobs; ` +
          `answered in ms ${stats(a.map((x) => x[1]))}; ` +
          `next job handled after ms ${next.length ? stats(next) : "n/a"}; ` +
          `cycle ms ${stats(cycles)}`,
      );
    },
  };
}

try {
  // --- Cleanup (not timed) ---
  const deleted = await client.deleteAllJobs({ where: { queue: QUEUE } });
  if (deleted > 0) {
    console.error(`zizq-drain: deleted ${deleted} leftover jobs from a previous run`);
  }

  // --- Enqueue phase ---
  const enqueueElapsed = await enqueueTimed(
    JOB_COUNT,
    (n) => ({ type: "bench", queue: QUEUE, payload: { n } }),
    (batch) => client.enqueueBulk(batch),
  );

  // --- Drain phase ---
  let handled = 0;
  let acked = 0;
  let worker;

  // Observe the Worker's bulk acks: count ids once the server has answered,
  // and stop once every job's ack has been (a job is acked only after it
  // was handled, so this is the end of both).
  const reportSuccessBulk = client.reportSuccessBulk.bind(client);
  client.reportSuccessBulk = async (ids) => {
    const sent = trace?.sent(ids.length);
    await reportSuccessBulk(ids);
    if (sent) trace.answered(sent);
    const before = acked;
    acked += ids.length;
    if (before < JOB_COUNT && acked >= JOB_COUNT) worker.stop();
  };

  const drainStart = performance.now();
  worker = new Worker({
    client,
    queues: [QUEUE],
    concurrency: CONCURRENCY,
    prefetch: PREFETCH,
    logger,
    handler: async () => {
      handled += 1;
      trace?.handled();
    },
  });
  // Resolves after stop(): in-flight handlers drained, buffered acks flushed.
  await worker.run();
  const drainElapsed = (performance.now() - drainStart) / 1000;

  if (handled !== JOB_COUNT || acked !== JOB_COUNT) {
    console.error(
      `zizq-drain: warning: handled ${handled}, acked ${acked}, expected ${JOB_COUNT}`,
    );
  }

  printResult("zizq", JOB_COUNT, enqueueElapsed, drainElapsed);
  trace?.report();

  // Post-run sanity check (not timed): nothing should still be pending.
  try {
    const left = await client.countJobs({
      queue: QUEUE,
      status: ["ready", "scheduled", "in_flight"],
    });
    if (left !== 0) console.error(`zizq-drain: warning: ${left} jobs still pending on ${QUEUE}`);
  } catch (err) {
    console.error(`zizq-drain: (pending-count check skipped: ${err?.message ?? err})`);
  }
} catch (err) {
  console.error("zizq-drain: failed:", err);
  process.exitCode = 1;
} finally {
  await client.close();
}
