/**
 * `http_request_duration_seconds` on every request's path (decision OPS-10): one map lookup per observation,
 * keyed by the label values as given; the label object is built once per series (`series.ts`).
 */
import { Histogram } from './series.js';

export class RequestHistogram extends Histogram {
  observe(method: string, operation: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${operation}`;
    this.record(this.find(key) ?? this.add(key, { method, operation, status: String(status) }), seconds);
  }
}
