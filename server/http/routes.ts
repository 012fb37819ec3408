/**
 * Matches a request to an operation of the generated operations table. The pipeline needs the
 * operation before the validator runs (credential, then guard, then validation: GAP-23), and it answers
 * 404 and 405 (with `Allow`, GAP-15) itself so those answers are the service's problems, not the
 * validator's.
 */
export interface OperationEntry {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly security: ReadonlyArray<ReadonlyArray<string>>;
  readonly tag: string;
}

export interface RouteMatch<E extends OperationEntry = OperationEntry> {
  operation: E;
  /** Decoded path parameters, as written in the URL (not yet validated). */
  params: Record<string, string>;
}

export type RouteLookup<E extends OperationEntry = OperationEntry> =
  | { kind: 'match'; match: RouteMatch<E> }
  | { kind: 'method_not_allowed'; allow: string[] }
  | { kind: 'not_found' };

interface CompiledPath<E> {
  template: string;
  regex: RegExp;
  names: string[];
  byMethod: Map<string, E>;
  /** Literal segments count: a literal beats a parameter when two templates match. */
  specificity: number;
}

function compile<E>(template: string): CompiledPath<E> {
  const names: string[] = [];
  let specificity = 0;
  const pattern = template
    .split('/')
    .map((segment) => {
      const param = /^\{([A-Za-z0-9_]+)\}$/.exec(segment);
      if (param?.[1]) {
        names.push(param[1]);
        return '([^/]+)';
      }
      specificity += 1;
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return { template, regex: new RegExp(`^${pattern}$`), names, byMethod: new Map(), specificity };
}

export class OperationRouter<E extends OperationEntry = OperationEntry> {
  private readonly paths: CompiledPath<E>[] = [];

  constructor(operations: Iterable<E>) {
    const byTemplate = new Map<string, CompiledPath<E>>();
    for (const op of operations) {
      let compiled = byTemplate.get(op.path);
      if (!compiled) {
        compiled = compile<E>(op.path);
        byTemplate.set(op.path, compiled);
      }
      compiled.byMethod.set(op.method.toUpperCase(), op);
    }
    this.paths = [...byTemplate.values()].sort((a, b) => b.specificity - a.specificity);
  }

  /** Whether some operation's path template matches, whatever the method (no parameters decoded). */
  has(pathname: string): boolean {
    for (const compiled of this.paths) if (compiled.regex.test(pathname)) return true;
    return false;
  }

  lookup(method: string, pathname: string): RouteLookup<E> {
    for (const compiled of this.paths) {
      const m = compiled.regex.exec(pathname);
      if (!m) continue;
      const params: Record<string, string> = {};
      for (let i = 0; i < compiled.names.length; i += 1) {
        const raw = m[i + 1] ?? '';
        let decoded: string;
        try {
          decoded = decodeURIComponent(raw);
        } catch {
          // Malformed percent-encoding names nothing.
          return { kind: 'not_found' };
        }
        params[compiled.names[i] as string] = decoded;
      }
      const operation = compiled.byMethod.get(method.toUpperCase());
      if (!operation) return { kind: 'method_not_allowed', allow: [...compiled.byMethod.keys()].sort() };
      return { kind: 'match', match: { operation, params } };
    }
    return { kind: 'not_found' };
  }
}
