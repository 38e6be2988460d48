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
// answered) and calls stop() when JOB_COUNT jobs have been handled AND their
// acks have been answered. The end time therefore marks the point at which
// the server has completed every job, like the JOB_COUNT-th 'completed'
// event in bull-drain.mjs.
//
// Env: ZIZQ_URL (default http://127.0.0.1:7890), ZIZQ_FORMAT (json|msgpack,
// default json), JOB_COUNT (default 100000), CONCURRENCY (default 100),
// PREFETCH (default 2 x CONCURRENCY), TIMEOUT_S (default 600; safety net,
// exits 2 if the run has not finished by then; 0 disables).
//
// Prints exactly one JSON line on stdout; all diagnostics go to stderr.
// Needs Node >= 22.19 (the client's own requirement).

const { Client, Worker } = await import(process.env.ZIZQ_CLIENT || "@zizq-labs/zizq");

const URL = process.env.ZIZQ_URL || "http://127.0.0.1:7890";
const FORMAT = process.env.ZIZQ_FORMAT || "json";
const JOB_COUNT = parseInt(process.env.JOB_COUNT || "100000", 10);
const CONCURRENCY = parseInt(process.env.CONCURRENCY || "100", 10);
const PREFETCH = parseInt(process.env.PREFETCH || String(CONCURRENCY * 2), 10);
const TIMEOUT_S = parseFloat(process.env.TIMEOUT_S || "600");
const QUEUE = "node/bench";
const BULK = 1000;

if (FORMAT !== "json" && FORMAT !== "msgpack") {
  console.error(`ZIZQ_FORMAT must be json or msgpack, got ${FORMAT}`);
  process.exit(64);
}
for (const [k, v] of Object.entries({ JOB_COUNT, CONCURRENCY, PREFETCH })) {
  if (!Number.isInteger(v) || v < 1) {
    console.error(`${k} must be a positive integer, got ${v}`);
    process.exit(64);
  }
}

if (TIMEOUT_S > 0) {
  setTimeout(() => {
    console.error(`zizq-drain: timed out after ${TIMEOUT_S}s`);
    process.exit(2);
  }, TIMEOUT_S * 1000).unref();
}

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

try {
  // --- Cleanup (not timed) ---
  const deleted = await client.deleteAllJobs({ where: { queue: QUEUE } });
  if (deleted > 0) {
    console.error(`zizq-drain: deleted ${deleted} leftover jobs from a previous run`);
  }

  // --- Enqueue phase ---
  const enqueueStart = performance.now();
  for (let sent = 0; sent < JOB_COUNT; ) {
    const batch = [];
    for (; batch.length < BULK && sent < JOB_COUNT; sent++) {
      batch.push({ type: "bench", queue: QUEUE, payload: { n: sent + 1 } });
    }
    await client.enqueueBulk(batch);
  }
  const enqueueElapsed = (performance.now() - enqueueStart) / 1000;

  // --- Drain phase ---
  let handled = 0;
  let acked = 0;
  let stopped = false;
  let worker;
  const maybeStop = () => {
    if (!stopped && handled >= JOB_COUNT && acked >= JOB_COUNT) {
      stopped = true;
      worker.stop();
    }
  };

  // Observe the Worker's bulk acks: count ids once the server has answered.
  const reportSuccessBulk = client.reportSuccessBulk.bind(client);
  client.reportSuccessBulk = async (ids) => {
    await reportSuccessBulk(ids);
    acked += ids.length;
    maybeStop();
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
      maybeStop();
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

  console.log(JSON.stringify({
    system: "zizq",
    jobs: JOB_COUNT,
    enqueue_s: +enqueueElapsed.toFixed(3),
    enqueue_jobs_per_s: Math.round(JOB_COUNT / enqueueElapsed),
    drain_s: +drainElapsed.toFixed(3),
    drain_jobs_per_s: Math.round(JOB_COUNT / drainElapsed),
  }));

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
