/**
 * The service's own counters, histograms and gauges (decision PERF-190). Each one keeps its numbers in plain
 * fields and gives them, at scrape time, through the metric interface prom-client's Registry formats (`name`,
 * `help`, `type`, `get()`), so the text stays prom-client's while prom-client itself loads on the first
 * scrape instead of at start.
 */

export interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** What prom-client's `Registry.registerMetric` accepts and `Registry.metrics()` formats. */
export interface ScrapedMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly aggregator: 'sum';
  get(): { name: string; help: string; type: string; aggregator: string; values: MetricValue[] };
}

/** A counter, unlabelled or with one label whose values are a closed set (OPS-12). */
export class Counter<Label extends string = never> implements ScrapedMetric {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly counts = new Map<string, number>();

  /** `labelName` null: one unlabelled series, shown as 0 before anything counts it. */
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: Label | null = null,
    /** Series shown at 0 from the start, so a scrape shows zeros rather than nothing. */
    known: readonly string[] = [],
  ) {
    if (labelName === null) this.counts.set('', 0);
    for (const value of known) this.counts.set(value, 0);
  }

  inc(by = 1, labelValue = ''): void {
    this.counts.set(labelValue, (this.counts.get(labelValue) ?? 0) + by);
  }

  get(): ReturnType<ScrapedMetric['get']> {
    const values = [...this.counts].map(([label, value]) => ({ labels: this.labelName === null ? {} : { [this.labelName]: label }, value }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

export interface Series {
  labels: Record<string, string>;
  /** Per bucket, not cumulative; an observation above the last bound is in `count` only (`+Inf`). */
  counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * A histogram whose series are found by one map lookup and counted in a typed array: on the request path
 * (`RequestHistogram`) prom-client's validated and hashed label objects cost more than the request's own
 * work (OPS-10).
 */
export class Histogram implements ScrapedMetric {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
  ) {}

  /** The series of these label values (`key`, joined), if observed before. */
  protected find(key: string): Series | undefined {
    return this.series.get(key);
  }

  protected add(key: string, labels: Record<string, string>): Series {
    const series = { labels, counts: new Float64Array(this.bounds.length), sum: 0, count: 0 };
    this.series.set(key, series);
    return series;
  }

  protected record(series: Series, seconds: number): void {
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

  get(): ReturnType<ScrapedMetric['get']> {
    const values: MetricValue[] = [];
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

/** A histogram with one label (`kind`), for the outbound calls. */
export class KindHistogram<Kind extends string> extends Histogram {
  observe(kind: Kind, seconds: number): void {
    this.record(this.find(kind) ?? this.add(kind, { kind }), seconds);
  }
}

/** A gauge read at each scrape. */
export class Gauge implements ScrapedMetric {
  readonly type = 'gauge';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => number,
  ) {}

  get(): ReturnType<ScrapedMetric['get']> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: [{ labels: {}, value: this.read() }] };
  }
}
