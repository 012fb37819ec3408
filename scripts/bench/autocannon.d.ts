// autocannon 9 ships no types; this covers the part of its programmatic API that scripts/bench.ts uses.
declare module 'autocannon' {
  interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    total: number;
    p50: number;
    p90: number;
    p97_5: number;
    p99: number;
  }
  interface Options {
    /** Several URLs: connection i goes to url[i % n], as a round-robin balancer would spread them. */
    url: string | string[];
    method?: 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE';
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    duration?: number;
    pipelining?: number;
    timeout?: number;
    /** Per-request overrides; `onResponse` sees each answer (the bench reads score attempts there). */
    requests?: Array<{
      method?: 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE';
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      onResponse?: (status: number, body: string) => void;
      /** Called before each request is sent; what it returns is sent instead (the score section's members). */
      setupRequest?: (request: { method?: string; path: string; headers: Record<string, string>; body?: string }) => {
        method?: string;
        path: string;
        headers: Record<string, string>;
        body?: string;
      };
    }>;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
    statusCodeStats: Record<string, { count: number }>;
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
