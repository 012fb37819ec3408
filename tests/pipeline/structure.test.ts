/**
 * `npm run check`'s `imports` and `decisions` steps (decisions KIT-60, KIT-61): each fails on what it is
 * there to catch, shown on a small tree of its own (`npm run check` itself holds the repository to both).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { definedDecisions, unresolvedCitations } from '../../scripts/lib/decision-ids.ts';
import { importCircles, importGraph, upwardImports } from '../../scripts/lib/import-graph.ts';
import type { Layer } from '../../scripts/lib/layers.ts';

const root = mkdtempSync(path.join(tmpdir(), 'tis-structure-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(root, 'tree-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const LAYERS: Layer[] = [
  { name: 'front', paths: ['server/dashboard/'] },
  { name: 'features', paths: ['server/audit/', 'server/http/registry.ts'] },
  { name: 'base', paths: ['server/store/', 'server/http/'] },
];

describe('the imports step', () => {
  it('names an import circle as a path round it, type-only imports included', () => {
    const dir = tree({
      'server/store/a.ts': "import { b } from './b.js';\nexport const a = b;\n",
      'server/store/b.ts': "import type { C } from './c.js';\nexport const b = 1 as unknown as C;\n",
      'server/store/c.ts': "import { a } from './a.js';\nexport type C = typeof a;\n",
      'server/store/d.ts': "import { a } from './a.js';\nexport const d = a;\n",
    });
    const graph = importGraph(dir, ['server/store/a.ts', 'server/store/b.ts', 'server/store/c.ts', 'server/store/d.ts']);
    expect(importCircles(graph)).toEqual([['server/store/a.ts', 'server/store/b.ts', 'server/store/c.ts', 'server/store/a.ts']]);
  });

  it('names an import from a lower layer to a higher one, by the longest matching path', () => {
    const dir = tree({
      'server/dashboard/guard.ts': "import { record } from '../audit/index.js';\nexport const guard = record;\n",
      'server/audit/index.ts': "import type { Guard } from '../dashboard/guard.js';\nimport { registry } from '../http/registry.js';\nexport const record = registry;\nexport type G = Guard;\n",
      'server/http/registry.ts': "import { problem } from './problem.js';\nexport const registry = problem;\n",
      'server/http/problem.ts': "// import { nothing } from '../dashboard/guard.js' is a comment, not an import\nexport const problem = 1;\n",
    });
    const graph = importGraph(dir, ['server/dashboard/guard.ts', 'server/audit/index.ts', 'server/http/registry.ts', 'server/http/problem.ts']);
    expect(upwardImports(graph, LAYERS)).toEqual([
      { from: 'server/audit/index.ts', to: 'server/dashboard/guard.ts', fromLayer: 'features', toLayer: 'front' },
    ]);
  });
});

describe('the decisions step', () => {
  const dir = tree({
    'docs/decisions/a.md': '# A\n\n- **PERF-60 One front.** text\n- **S-07 Tokens.** text\n',
  });
  const defined = definedDecisions(path.join(dir, 'docs/decisions'));

  it('finds a cited ID no decision file defines, with its line', () => {
    const text = '// decision PERF-60 and S-7 hold\n// see PERF-61, which nobody wrote\n';
    expect(unresolvedCitations('server/x.ts', text, defined)).toEqual([{ file: 'server/x.ts', line: 2, id: 'PERF-61' }]);
  });

  it('takes a quoted value that looks like an ID for data, not a citation', () => {
    expect(unresolvedCitations('tests/fixture.ts', "{ org_defined_id: 'S-1001' }", defined)).toEqual([]);
  });
});
