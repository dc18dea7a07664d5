// The import graph of the project's own source files, for the layering test (test/layering.quick.test.ts).
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SOURCE_EXT = /\.(ts|mts|mjs|js)$/;

/** Every source file under `dir` (relative to `root`), skipping node_modules. */
export function sourceFiles(root: string, dir: string): string[] {
  const abs = path.join(root, dir);
  if (!existsSync(abs)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(abs, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(root, rel));
    else if (SOURCE_EXT.test(entry.name) && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.d.mts')) out.push(rel);
  }
  return out.sort();
}

/**
 * The relative specifiers a file imports: static imports and re-exports (type-only ones too: a cycle
 * of types is still a cycle a reader has to untangle) and dynamic `import('…')` with a literal.
 * TypeScript's own pre-processor reads them, so comments and strings are not mistaken for imports.
 */
export function importSpecifiers(text: string): string[] {
  const info = ts.preProcessFile(text, true, true);
  return info.importedFiles.map((f) => f.fileName);
}

/** Resolves a relative specifier of `from` to a project file (relative to root), or undefined. */
function resolve(root: string, from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.join(path.dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, `${base}/index.ts`]) {
    const abs = path.join(root, candidate);
    if (existsSync(abs) && statSync(abs).isFile()) return path.normalize(candidate);
  }
  // A specifier that points nowhere is still an edge to its folder's layer.
  return path.normalize(base);
}

/** file → the project files it imports (relative paths, sorted). */
export function importGraph(root: string, dirs: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const dir of dirs) {
    for (const file of sourceFiles(root, dir)) {
      const text = readFileSync(path.join(root, file), 'utf8');
      const targets = importSpecifiers(text)
        .map((spec) => resolve(root, file, spec))
        .filter((t): t is string => t !== undefined);
      graph.set(file, [...new Set(targets)].sort());
    }
  }
  return graph;
}

/** The import cycles (strongly connected components with more than one file, or a file importing itself). */
export function importCycles(graph: Map<string, string[]>): string[][] {
  // Tarjan's algorithm, iterative so a deep graph cannot overflow the stack.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
    index.set(start, counter); low.set(start, counter); counter++;
    stack.push(start); onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = graph.get(frame.node) ?? [];
      if (frame.next < edges.length) {
        const to = edges[frame.next++]!;
        if (!graph.has(to)) continue;
        if (!index.has(to)) {
          index.set(to, counter); low.set(to, counter); counter++;
          stack.push(to); onStack.add(to);
          work.push({ node: to, next: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.node)!));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1 || edges.includes(frame.node)) cycles.push(component.sort());
      }
    }
  }
  return cycles;
}

/** The top-level folder of a project-relative path (`lib`, `pipeline`, …). */
export function layerOf(file: string): string {
  return file.split(/[\\/]/)[0]!;
}

/**
 * The unit of a project file inside its layer: the file itself when it lies at the layer's top
 * (`pipeline/build.ts`) or is named in `own` (a file that sits apart from its folder, e.g.
 * `pipeline/sources/index.ts`), else its folder in the layer (`pipeline/osm`).
 */
export function unitOf(file: string, own: ReadonlySet<string> = new Set()): string {
  const parts = file.split(/[\\/]/);
  const rel = parts.join('/');
  return parts.length <= 2 || own.has(rel) ? rel : `${parts[0]}/${parts[1]}`;
}

/** The graph of the units of `layer` (see `unitOf`): unit → the other units of the layer it imports. */
export function unitGraph(graph: Map<string, string[]>, layer: string, own: ReadonlySet<string> = new Set()): Map<string, string[]> {
  const units = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    if (layerOf(file) !== layer) continue;
    const from = unitOf(file, own);
    const to = units.get(from) ?? new Set<string>();
    units.set(from, to);
    for (const t of targets) if (layerOf(t) === layer && unitOf(t, own) !== from) to.add(unitOf(t, own));
  }
  return new Map([...units].map(([u, ts]) => [u, [...ts].sort()]));
}

/**
 * The imports of `layer` that go against `order` (its units, top first, as paths inside the layer:
 * `osm`, `sources/index.ts`): "file -> target" for each import from a listed unit to a unit listed
 * above it. Units not listed (the files at the layer's top) are left to the cycle check.
 */
export function importsAgainstOrder(graph: Map<string, string[]>, layer: string, order: readonly string[]): string[] {
  const rank = new Map(order.map((u, i) => [`${layer}/${u}`, i]));
  const own = new Set(order.filter((u) => u.includes('/')).map((u) => `${layer}/${u}`));
  const out: string[] = [];
  for (const [file, targets] of graph) {
    if (layerOf(file) !== layer) continue;
    const from = rank.get(unitOf(file, own));
    if (from === undefined) continue;
    for (const t of targets) {
      const to = layerOf(t) === layer ? rank.get(unitOf(t, own)) : undefined;
      if (to !== undefined && to < from) out.push(`${file} -> ${t}`);
    }
  }
  return out;
}
