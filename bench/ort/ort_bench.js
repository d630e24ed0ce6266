// Times ONNX Runtime (CPU provider, all graph optimizations) on an ONNX
// file, the same way `graph-runner bench` times Weir: session creation,
// the first run, warm-up runs, then the median of timed runs, with seeded
// random inputs.
// Not part of the build or the tests: Weir does not depend on ONNX Runtime.
//
//   npm install --prefix /tmp/ort onnxruntime-node@1.30.0    (from the npm registry)
//   NODE_PATH=/tmp/ort/node_modules node bench/ort/ort_bench.js model.onnx [threads] [runs]
const ort = require('onnxruntime-node');

function randomTensor(meta, seed) {
  const dims = meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  const count = dims.reduce((a, b) => a * b, 1);
  let state = seed >>> 0;
  const next = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 4294967296);
  if (meta.type === 'int64') {
    const data = new BigInt64Array(count);
    for (let i = 0; i < count; ++i) data[i] = BigInt(Math.floor(next() * 1000));
    return new ort.Tensor('int64', data, dims);
  }
  const data = new Float32Array(count);
  for (let i = 0; i < count; ++i) data[i] = next();
  return new ort.Tensor('float32', data, dims);
}

async function main() {
  const [file, threadsArg, runsArg] = process.argv.slice(2);
  const threads = Number(threadsArg || 2), runs = Number(runsArg || 50);
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(file, {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: threads, interOpNumThreads: 1,
  });
  const createMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const feeds = {};
  session.inputNames.forEach((name, i) => { feeds[name] = randomTensor(session.inputMetadata[i], 42 + i); });
  const t1 = process.hrtime.bigint();
  await session.run(feeds);
  const firstMs = Number(process.hrtime.bigint() - t1) / 1e6;
  for (let i = 0; i < 4; ++i) await session.run(feeds);
  const times = [];
  for (let i = 0; i < runs; ++i) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  const pick = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  console.log(`onnxruntime ${ort.env.versions.common} ${file}: session ${createMs.toFixed(1)} ms, first run ${firstMs.toFixed(1)} ms, ` +
              `latency_ms p50=${pick(0.5).toFixed(3)} p90=${pick(0.9).toFixed(3)} min=${times[0].toFixed(3)} (${threads} threads)`);
}

main().catch((e) => { console.error('error: ' + e.message); process.exit(1); });
