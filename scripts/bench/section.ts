/**
 * What a section of `npm run bench` is: a group of operations measured on every target that serves them.
 * Each section is its own file in scripts/bench/ and one line in scripts/bench.ts's `SECTIONS`; a section
 * sets up what it needs through the real services (the same data dir every SQLite target opens).
 */
import type { Services } from '../../server/http/services.js';
import type { PlacedLocation, TestLaunch } from '../../tests/server/harness.js';
import type { LmsProcessSpec } from './school-lms.js';

/** What the bench prepared before any server started: a tool, a graded placement and a student's launch. */
export interface BenchFixture {
  services: Services;
  student: TestLaunch;
  /** The graded placement the student launched (a section may launch more people into it). */
  placed: PlacedLocation;
  /** The LMS in its own process that scores are published to (`school-lms.ts`); `pid` for its CPU. */
  lms: Pick<LmsProcessSpec, 'url' | 'controlToken'> & { pid: number };
}

export interface BenchOperation {
  name: string;
  method: 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE';
  /** On the SQLite fixture; other targets rewrite it onto their own fixture (`Target.path`). */
  path: string;
  body?: string;
  headers?: Record<string, string>;
  /**
   * A 2xx that still did not do the operation's work (a score whose attempt came back `failed`): the
   * reason, counted as a failure and not as a served request. Reading the body costs the load generator a
   * little, so only operations that need it set this.
   */
  failure?: (status: number, body: string) => string | null;
  /**
   * Requests go to these in turn (path and `Authorization`), e.g. many members' score URLs with each
   * member's own token, instead of `path` alone. A target that holds another fixture (its `path` does not
   * map every one of them) gets `path` alone.
   */
  spread?: ReadonlyArray<{ path: string; auth: string }>;
  /**
   * Another process the operation's work reaches (the LMS a score is published to): its CPU per served
   * request is reported beside the target's own, not inside it.
   */
  reaches?: { name: string; pid: number };
  /**
   * Seconds of warm-up before each of its cells when that is longer than the bench's `--warmup` (which 0
   * still turns off): an operation whose code reaches its steady speed later than the others'.
   */
  warmupS?: number;
  /** Targets that cannot serve it (by name); default: every target. */
  skip?: readonly string[];
}

export interface BenchSection {
  name: string;
  /** Called once, before the servers start; the returned operations are measured in this order. */
  prepare(fixture: BenchFixture): Promise<BenchOperation[]>;
}
