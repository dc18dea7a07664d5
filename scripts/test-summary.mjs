// Prints the test suite's count line and duration after `make test`:
//   node scripts/test-summary.mjs build/test-results.json <wall-clock seconds>
import { readFileSync } from 'node:fs';

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
