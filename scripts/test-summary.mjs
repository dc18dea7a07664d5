// Prints the test suite's count line and duration after `make test`, and the files that cost the most
// CPU (build/test-cpu.jsonl, written by test/setup-cpu.ts beside the results):
//   node scripts/test-summary.mjs build/test-results.json <wall-clock seconds>
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const [file, seconds] = process.argv.slice(2);
let r;
try {
  r = JSON.parse(readFileSync(file, 'utf8'));
} catch (e) {
  console.log(`no test results: ${file} was not written (${e.code ?? e.message})`);
  process.exit(0);
}
const failedFiles = r.testResults.filter((t) => t.status === 'failed').map((t) => t.name.replace(/^.*\/(test\/)/, '$1'));
console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed${r.numPendingTests ? `, ${r.numPendingTests} skipped` : ''}` +
  (failedFiles.length ? ` (failing files: ${failedFiles.join(', ')})` : ''));
const s = Number(seconds);
console.log(`test suite: ${Math.floor(s / 60)} min ${s % 60} s (${s} s wall clock, ${r.numTotalTestSuites} suites in ${r.testResults.length} files)`);

const cpuFile = join(dirname(file), 'test-cpu.jsonl');
if (existsSync(cpuFile)) {
  const rows = readFileSync(cpuFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const total = rows.reduce((a, r) => a + r.cpu, 0);
  rows.sort((a, b) => b.cpu - a.cpu);
  console.log(`CPU of the test files (children included): ${total.toFixed(0)} s; the heaviest:`);
  for (const r of rows.slice(0, 10)) console.log(`  ${r.cpu.toFixed(1).padStart(7)} CPU s ${r.wall.toFixed(1).padStart(7)} s  ${r.file}`);
}
