// The elevation profile: the /height requests for a line, its statistics and the SVG chart. Distances
// are the server's (`range_height`), never computed here.

/** Samples aimed at along a line (resample_distance = length / this, at least the server's 10 m). */
const TARGET_SAMPLES = 300;
/** Smallest resample_distance the server accepts, metres. */
const MIN_RESAMPLE_M = 10;
const SVG_NS = 'http://www.w3.org/2000/svg';
/** Chart size in SVG units (it scales to the panel's width). */
const W = 320;
const H = 150;
const PAD = { left: 38, right: 8, top: 8, bottom: 20 };

/** The /height request that measures a line of [lon, lat] points: range heights at its vertices only. */
export function lengthRequest(points) {
  return { shape: points.map(([lon, lat]) => ({ lat, lon })), range: true };
}

/** A line's length in metres: the last distance of the server's answer to `lengthRequest`. */
export function lineLength(range) {
  return range.length ? range[range.length - 1][0] : 0;
}

/** The /height request for the profile of a line `length` metres long (see `lineLength`): range heights, resampled evenly. */
export function profileRequest(points, length) {
  const resample = Math.max(MIN_RESAMPLE_M, Math.ceil(length / TARGET_SAMPLES));
  return { ...lengthRequest(points), resample_distance: resample };
}

/**
 * Statistics of a `range_height` answer ([distance, height | null] pairs): total distance, min and
 * max height, ascent and descent (summed over neighbouring samples that both have a height), and the
 * number of samples without data.
 */
export function profileStats(range) {
  let min = Infinity;
  let max = -Infinity;
  let ascent = 0;
  let descent = 0;
  let gaps = 0;
  for (let i = 0; i < range.length; i++) {
    const h = range[i][1];
    if (h === null) {
      gaps++;
      continue;
    }
    min = Math.min(min, h);
    max = Math.max(max, h);
    const prev = i > 0 ? range[i - 1][1] : null;
    if (prev !== null) {
      if (h > prev) ascent += h - prev;
      else descent += prev - h;
    }
  }
  const known = range.length - gaps;
  return {
    distance: lineLength(range),
    min: known ? min : null,
    max: known ? max : null,
    ascent,
    descent,
    samples: range.length,
    gaps,
  };
}

/** Metres for people: `850 m`, `12.4 km`. */
function distanceText(m) {
  return m >= 1000 ? `${(m / 1000).toFixed(m >= 10000 ? 1 : 2)} km` : `${Math.round(m)} m`;
}

function svg(name, attrs) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/**
 * Draw distance × height into `box`: a line and area per run of samples with data (samples without
 * data leave gaps), axes with the height range and total distance, and the statistics. The figures
 * are also set as data attributes of `box` (rounded to 0.1 m) for scripts and tests.
 */
export function drawProfile(box, range) {
  const s = profileStats(range);
  box.replaceChildren();
  for (const [k, v] of Object.entries(s)) box.dataset[k] = v === null ? '' : String(Math.round(v * 10) / 10);
  if (s.min === null) {
    const p = document.createElement('p');
    p.className = 'muted';
    p.textContent = 'No elevation data along this line.';
    box.append(p);
    return s;
  }
  const span = Math.max(1, s.max - s.min);
  const lo = s.min - span * 0.05;
  const hi = s.max + span * 0.05;
  const x = (d) => PAD.left + ((W - PAD.left - PAD.right) * d) / Math.max(1, s.distance);
  const y = (h) => PAD.top + ((H - PAD.top - PAD.bottom) * (hi - h)) / (hi - lo);
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'elevation profile' });
  const runs = [];
  let run = [];
  for (const [d, h] of range) {
    if (h === null) {
      if (run.length) runs.push(run);
      run = [];
    } else run.push([x(d), y(h)]);
  }
  if (run.length) runs.push(run);
  const base = y(lo);
  for (const r of runs) {
    const line = r.map(([px, py], i) => `${i ? 'L' : 'M'}${px.toFixed(1)},${py.toFixed(1)}`).join('');
    chart.append(svg('path', { class: 'area', d: `${line}L${r[r.length - 1][0].toFixed(1)},${base}L${r[0][0].toFixed(1)},${base}Z` }));
    // A lone sample still shows as a dot-sized segment.
    chart.append(svg('path', { class: 'line', d: r.length > 1 ? line : `${line}h0.5` }));
  }
  chart.append(svg('path', { class: 'axis', d: `M${PAD.left},${PAD.top}V${H - PAD.bottom}H${W - PAD.right}` }));
  const label = (text, attrs) => {
    const t = svg('text', attrs);
    t.textContent = text;
    chart.append(t);
  };
  label(`${Math.round(s.max)} m`, { x: PAD.left - 4, y: y(s.max) + 3, 'text-anchor': 'end' });
  label(`${Math.round(s.min)} m`, { x: PAD.left - 4, y: y(s.min) + 3, 'text-anchor': 'end' });
  label('0', { x: PAD.left, y: H - 6, 'text-anchor': 'start' });
  label(distanceText(s.distance), { x: W - PAD.right, y: H - 6, 'text-anchor': 'end' });
  box.append(chart);
  const dl = document.createElement('dl');
  const stat = (name, value) => {
    const item = document.createElement('div');
    const dt = document.createElement('dt');
    dt.textContent = name;
    const dd = document.createElement('dd');
    dd.textContent = value;
    item.append(dt, dd);
    dl.append(item);
  };
  stat('Distance', distanceText(s.distance));
  stat('Min', `${Math.round(s.min)} m`);
  stat('Max', `${Math.round(s.max)} m`);
  stat('Ascent', `${Math.round(s.ascent)} m`);
  stat('Descent', `${Math.round(s.descent)} m`);
  stat('No data', s.gaps ? `${s.gaps} of ${s.samples}` : 'none');
  box.append(dl);
  return s;
}
