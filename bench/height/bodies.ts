/** Write the two benchmark bodies: 1,000 random points over the sample tile, with and without range. */
import { writeFileSync } from 'node:fs';

const POINTS = 1000;
const shape = Array.from({ length: POINTS }, (_, i) => ({ lat: +(43.2 + 0.6 * ((i * 0.6180339887) % 1)).toFixed(6), lon: +(7.1 + 0.8 * ((i * 0.7548776662) % 1)).toFixed(6) }));
const [dir] = process.argv.slice(2);
writeFileSync(`${dir}/plain.json`, JSON.stringify({ shape }));
writeFileSync(`${dir}/range.json`, JSON.stringify({ shape, range: true }));
