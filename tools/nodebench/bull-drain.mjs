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
// (common.mjs).
//
// Prints exactly one JSON line on stdout; diagnostics go to stderr.
// BullMQ and ioredis: `npm install` beside this file (package.json).

import { Queue, Worker } from "bullmq";
import { armTimeout, enqueueTimed, positiveInt, printResult } from "./common.mjs";

const HOST = process.env.REDIS_HOST || "127.0.0.1";
const PORT = positiveInt("REDIS_PORT", 6379);
const JOB_COUNT = positiveInt("JOB_COUNT", 100000);
const CONCURRENCY = positiveInt("CONCURRENCY", 100);
const QUEUE = "node-bench";

armTimeout("bull-drain");

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
  const enqueueElapsed = await enqueueTimed(
    JOB_COUNT,
    (n) => ({ name: "bench", data: { n }, opts }),
    (batch) => queue.addBulk(batch),
  );

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

  printResult("bullmq", JOB_COUNT, enqueueElapsed, drainElapsed);

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
