// What both drain scripts share: their settings from the environment, the
// safety timeout, the timed enqueue in bulks and the one result line, so
// that the two measure the same thing the same way.

// positiveInt reads the environment variable name (fallback when unset)
// and exits with status 64 when it is not a positive integer.
export function positiveInt(name, fallback) {
  const v = parseInt(process.env[name] ?? String(fallback), 10);
  if (!Number.isInteger(v) || v < 1) {
    console.error(`${name} must be a positive integer, got ${process.env[name]}`);
    process.exit(64);
  }
  return v;
}

// armTimeout exits with status 2 when the run has not finished after
// TIMEOUT_S seconds (600; 0 disables), so a stalled drain cannot hang a
// sitting.
export function armTimeout(tag) {
  const seconds = parseFloat(process.env.TIMEOUT_S || "600");
  if (seconds > 0) {
    setTimeout(() => {
      console.error(`${tag}: timed out after ${seconds}s`);
      process.exit(2);
    }, seconds * 1000).unref();
  }
}

// enqueueTimed sends count items, item(n) for n = 1..count, in bulks of
// 1,000 through send, one bulk at a time, and returns the seconds it took.
export async function enqueueTimed(count, item, send) {
  const start = performance.now();
  for (let sent = 0; sent < count; ) {
    const batch = [];
    for (; batch.length < 1000 && sent < count; sent++) batch.push(item(sent + 1));
    await send(batch);
  }
  return (performance.now() - start) / 1000;
}

// printResult writes the one JSON line on stdout that a sitting collects.
export function printResult(system, jobs, enqueueSeconds, drainSeconds) {
  console.log(JSON.stringify({
    system,
    jobs,
    enqueue_s: +enqueueSeconds.toFixed(3),
    enqueue_jobs_per_s: Math.round(jobs / enqueueSeconds),
    drain_s: +drainSeconds.toFixed(3),
    drain_jobs_per_s: Math.round(jobs / drainSeconds),
  }));
}
