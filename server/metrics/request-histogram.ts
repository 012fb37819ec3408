/**
 * `http_request_duration_seconds` on every request's path (decision OPS-10): a histogram of its own, because
 * prom-client's (even a labelled child) validates and hashes its label object on every observation. Here a
 * series is found by one map lookup and counted in a typed array; prom-client reads it at scrape time through
 * the metric interface its Registry formats (`name`, `help`, `type`, `get()`), so the text is prom-client's.
 */
import type { Registry } from 'prom-client';

interface Series {
  labels: { method: string; operation: string; status: string };
  /** Per bucket, not cumulative; an observation above the last bound is in `count` only (`+Inf`). */
  counts: Float64Array;
  sum: number;
  count: number;
}

interface Value {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
}

export class RequestHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  observe(method: string, operation: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${operation}`;
    let series = this.series.get(key);
    if (series === undefined) {
      series = { labels: { method, operation, status: String(status) }, counts: new Float64Array(this.bounds.length), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i += 1) {
      if (seconds <= (bounds[i] as number)) {
        series.counts[i] = (series.counts[i] ?? 0) + 1;
        break;
      }
    }
    series.sum += seconds;
    series.count += 1;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: Value[] } {
    const values: Value[] = [];
    for (const { labels, counts, sum, count } of this.series.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += counts[i] as number;
        values.push({ labels: { ...labels, le }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { ...labels, le: '+Inf' }, value: count, metricName: `${this.name}_bucket` });
      values.push({ labels, value: sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
