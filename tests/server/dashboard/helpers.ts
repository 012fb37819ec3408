/**
 * Calls the dashboard API over real HTTP as the platform team or a builder. The platform token is the
 * one the server generated at first start into `DATA_DIR/platform-token` (the harness sets no
 * `PLATFORM_TOKEN`), read from that file as an operator would.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { TestServer } from '../harness.js';

export interface Answer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

export interface CallOptions {
  /** Sent as is (a string) instead of JSON. */
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

export type Caller = <T = Record<string, unknown>>(method: string, path: string, body?: unknown, options?: CallOptions) => Promise<Answer<T>>;

export function platformToken(server: TestServer): string {
  return readFileSync(join(server.dataDir, 'platform-token'), 'utf8').trim();
}

export function caller(server: TestServer, token: string | null): Caller {
  return async <T>(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<Answer<T>> => {
    const headers: Record<string, string> = { ...options.headers };
    if (token !== null) headers['Authorization'] = `Bearer ${token}`;
    let payload: string | undefined;
    if (options.raw !== undefined) payload = options.raw;
    else if (body !== undefined) payload = JSON.stringify(body);
    if (payload !== undefined) headers['Content-Type'] = options.contentType ?? 'application/json';
    const response = await fetch(`${server.url}/dashboard/v1${path}`, { method, headers, ...(payload !== undefined ? { body: payload } : {}) });
    const text = await response.text();
    const parsed = text === '' ? {} : (JSON.parse(text) as T);
    return { status: response.status, headers: response.headers, body: parsed as T };
  };
}

/** Expects a problem with this status, code and exact detail, in the RFC 9457 envelope. */
export function expectProblem(answer: Answer, status: number, code: string, detail?: string | RegExp): void {
  expect({ status: answer.status, code: answer.body['code'] }).toEqual({ status, code });
  expect(answer.headers.get('content-type')).toBe('application/problem+json');
  expect(answer.body['status']).toBe(status);
  expect(answer.body['type']).toBe('about:blank');
  expect(answer.body['request_id']).toBe(answer.headers.get('request-id'));
  if (typeof detail === 'string') expect(answer.body['detail']).toBe(detail);
  else if (detail) expect(String(answer.body['detail'])).toMatch(detail);
}

export interface Builder {
  id: string;
  email: string;
  token: string;
  call: Caller;
}

let builderCount = 0;

export async function createBuilder(server: TestServer, platform: Caller, name = 'Ana Ruiz'): Promise<Builder> {
  builderCount += 1;
  const email = `builder${builderCount}.${Date.now()}@northwind.example`;
  const created = await platform<{ builder: { id: string; email: string }; token: string }>('POST', '/builders', { name, email });
  expect(created.status).toBe(201);
  return { id: created.body.builder.id, email: created.body.builder.email, token: created.body.token, call: caller(server, created.body.token) };
}

export interface Registered {
  appId: string;
  apiKey: string | null;
}

export async function register(builder: Builder, body: Record<string, unknown> = { name: 'Quiz Tool', hosting: 'self_hosted' }): Promise<Registered> {
  const registered = await builder.call<{ app: { id: string }; api_key: string | null }>('POST', '/apps', body);
  expect(registered.status).toBe(201);
  return { appId: registered.body.app.id, apiKey: registered.body.api_key };
}
