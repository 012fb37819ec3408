/**
 * The import graph of the repository's own TypeScript sources, and the two rules `npm run check` holds it to
 * (decision KIT-60): no import circle, and no import from a lower layer (scripts/lib/layers.ts) to a higher
 * one. Type-only imports count: a type that has to come from above couples the two files all the same.
 *
 * Imports are read with TypeScript's own pre-processor (static, `export … from`, `import()` and
 * `import type`), so a comment or a string that looks like an import is not one.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import type { Layer } from './layers.ts';

export type ImportGraph = ReadonlyMap<string, readonly string[]>;

/** The graph over `files` (paths relative to `root`, `/`-separated); imports of files outside the set are left out. */
export function importGraph(root: string, files: readonly string[]): ImportGraph {
  const known = new Set(files);
  const resolve = (from: string, spec: string): string | null => {
    if (!spec.startsWith('.')) return null;
    const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
    for (const candidate of [base.replace(/\.js$/, '.ts'), base, `${base}.ts`, `${base}/index.ts`]) {
      if (known.has(candidate)) return candidate;
    }
    return null;
  };
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(path.join(root, file), 'utf8'), true, true);
    const targets = importedFiles.map((i) => resolve(file, i.fileName)).filter((t): t is string => t !== null && t !== file);
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** Every import circle, each as the files of one path round it (`a → b → c → a`), shortest found first. */
export function importCircles(graph: ImportGraph): string[][] {
  // Tarjan's strongly connected components; each component of two or more files holds at least one circle.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component);
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return components.map((component) => shortestCircle(graph, new Set(component)));
}

/** A shortest path from the component's first file (in name order) back to itself, inside the component. */
function shortestCircle(graph: ImportGraph, component: ReadonlySet<string>): string[] {
  const start = [...component].sort()[0]!;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!component.has(w)) continue;
      if (w === start) {
        const circle = [v];
        while (circle[0] !== start) circle.unshift(previous.get(circle[0]!)!);
        return [...circle, start];
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return [...component];
}

/** The layer a file belongs to: the entry with the longest matching path, or null when none matches. */
export function layerOf(layers: readonly Layer[], file: string): number | null {
  let best: { rank: number; length: number } | null = null;
  layers.forEach((layer, rank) => {
    for (const p of layer.paths) {
      const matches = p.endsWith('/') ? file.startsWith(p) : file === p;
      if (matches && (best === null || p.length > best.length)) best = { rank, length: p.length };
    }
  });
  return best === null ? null : (best as { rank: number }).rank;
}

export interface UpwardImport {
  from: string;
  to: string;
  fromLayer: string;
  toLayer: string;
}

/** Every import from a file to a file of a higher layer. */
export function upwardImports(graph: ImportGraph, layers: readonly Layer[]): UpwardImport[] {
  const found: UpwardImport[] = [];
  for (const [from, targets] of graph) {
    const a = layerOf(layers, from);
    if (a === null) continue;
    for (const to of targets) {
      const b = layerOf(layers, to);
      if (b !== null && b < a) found.push({ from, to, fromLayer: layers[a]!.name, toLayer: layers[b]!.name });
    }
  }
  return found.sort((x, y) => x.from.localeCompare(y.from) || x.to.localeCompare(y.to));
}

/** Source files that no layer names: a new top-level folder must be given its place in the table. */
export function unplaced(graph: ImportGraph, layers: readonly Layer[]): string[] {
  return [...graph.keys()].filter((f) => layerOf(layers, f) === null).sort();
}
