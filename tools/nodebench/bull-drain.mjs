// Drain benchmark for BullMQ on Redis, shaped like zizq-drain.mjs:
//   1. obliterate the bench queue (not timed)
//   2. enqueue JOB_COUNT jobs with queue.addBulk in bulks of 1,000 (timed);
//      name "bench", data {n}, removeOnComplete/removeOnFail: true so that
//      finished jobs are deleted (zizq's server default: completed-job
//      retention 0)
//   3. drain them with a Worker (no-op processor, given concurrency) (timed);
//      the end time is taken on the JOB_COUNT-th 'completed' event, i.e. once
//      the last job's completion has been written to Redis. Then the worker
//      and queue are closed (not timed).
//
// Env: REDIS_HOST (default 127.0.0.1), REDIS_PORT (default 6379),
// JOB_COUNT (default 100000), CONCURRENCY (default 100), TIMEOUT_S
// (default 600; safety net, exits 2 if not finished by then; 0 disables).
//
// Prints exactly one JSON line on stdout; diagnostics go to stderr.
// BullMQ and ioredis: `npm install` beside this file (package.json).

import { Queue, Worker } from "bullmq";

const HOST = process.env.REDIS_HOST || "127.0.0.1";
const PORT = parseInt(process.env.REDIS_PORT || "6379", 10);
const JOB_COUNT = parseInt(process.env.JOB_COUNT || "100000", 10);
const CONCURRENCY = parseInt(process.env.CONCURRENCY || "100", 10);
const TIMEOUT_S = parseFloat(process.env.TIMEOUT_S || "600");
const QUEUE = "node-bench";
const BULK = 1000;

for (const [k, v] of Object.entries({ PORT, JOB_COUNT, CONCURRENCY })) {
  if (!Number.isInteger(v) || v < 1) {
    console.error(`${k} must be a positive integer, got ${v}`);
    process.exit(64);
  }
}

if (TIMEOUT_S > 0) {
  setTimeout(() => {
    console.error(`bull-drain: timed out after ${TIMEOUT_S}s`);
    process.exit(2);
  }, TIMEOUT_S * 1000).unref();
}

console.error(
  `bull-drain: redis=${HOST}:${PORT} jobs=${JOB_COUNT} concurrency=${CONCURRENCY}`,
);

const connection = { host: HOST, port: PORT };
const queue = new Queue(QUEUE, { connection });
let worker;

try {
  // --- Cleanup (not timed) ---
  await queue.obliterate({ force: true });

  // --- Enqueue phase ---
  const opts = { removeOnComplete: true, removeOnFail: true };
  const enqueueStart = performance.now();
  for (let sent = 0; sent < JOB_COUNT; ) {
    const batch = [];
    for (; batch.length < BULK && sent < JOB_COUNT; sent++) {
      batch.push({ name: "bench", data: { n: sent + 1 }, opts });
    }
    await queue.addBulk(batch);
  }
  const enqueueElapsed = (performance.now() - enqueueStart) / 1000;

  // --- Drain phase ---
  let completed = 0;
  let failed = 0;
  let resolveDone;
  const done = new Promise((resolve) => { resolveDone = resolve; });

  const drainStart = performance.now();
  worker = new Worker(QUEUE, async () => {}, { connection, concurrency: CONCURRENCY });
  worker.on("completed", () => {
    completed += 1;
    if (completed === JOB_COUNT) resolveDone(performance.now());
  });
  worker.on("failed", (_job, err) => {
    failed += 1;
    console.error("bull-drain: job failed:", err?.message ?? err);
  });
  worker.on("error", (err) => console.error("bull-drain: worker error:", err?.message ?? err));

  const drainEnd = await done;
  const drainElapsed = (drainEnd - drainStart) / 1000;

  console.log(JSON.stringify({
    system: "bullmq",
    jobs: JOB_COUNT,
    enqueue_s: +enqueueElapsed.toFixed(3),
    enqueue_jobs_per_s: Math.round(JOB_COUNT / enqueueElapsed),
    drain_s: +drainElapsed.toFixed(3),
    drain_jobs_per_s: Math.round(JOB_COUNT / drainElapsed),
  }));

  await worker.close();
  worker = undefined;

  // Post-run sanity check (not timed).
  const counts = await queue.getJobCounts("wait", "active", "delayed", "completed", "failed");
  const pending = counts.wait + counts.active + counts.delayed;
  if (pending !== 0 || failed !== 0) {
    console.error(`bull-drain: warning: counts after drain ${JSON.stringify(counts)}, failed=${failed}`);
  }
} catch (err) {
  console.error("bull-drain: failed:", err);
  process.exitCode = 1;
} finally {
  if (worker) await worker.close().catch(() => {});
  await queue.close().catch(() => {});
}
